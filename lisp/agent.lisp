;;;; agent.lisp — the Lisp side of lispmcp.
;;;;
;;;; Every lispmcp session is one SBCL process (a "worker") started from a core
;;;; saved with this agent as its toplevel.  The agent reads evaluate requests
;;;; from fd 3, evaluates the code like a REPL would (definitions, the current
;;;; package and print settings persist), and answers each with one JSON reply.
;;;; docs/worker-protocol.md is the contract; build the core with
;;;;
;;;;   sbcl --noinform --non-interactive --no-sysinit --no-userinit \
;;;;        --load lisp/agent.lisp \
;;;;        --eval '(lispmcp-agent:save-core "build/lispmcp-worker.core")'

(defpackage :lispmcp-agent
  (:use :common-lisp)
  (:export #:main #:save-core))

(in-package :lispmcp-agent)

;;; Bounded output streams

(defclass capture (sb-gray:fundamental-character-output-stream)
  ((cap :initarg :cap :initform nil :reader cap) ; UTF-8 bytes kept; NIL = all
   ;; A strict capture THROWs to itself once full: printing a value stops early.
   (strict :initarg :strict :initform nil :reader strict)
   (kept :initform 0 :accessor kept)
   (dropped :initform 0 :accessor dropped)
   (column :initform 0 :accessor column)
   ;; The kept text, UTF-8 encoded: BUFFER up to FILL-INDEX.  Octets are a
   ;; quarter of a string's size, and are what the reply is made of anyway.
   (buffer :initform (make-octets 64) :accessor buffer)
   (fill :initform 0 :accessor fill-index)
   ;; When the server asked for output as it is written: the stream's name in
   ;; the interim frames, the request's seq, how much was forwarded, and when.
   (forward :initarg :forward :initform nil :reader forward)
   (seq :initarg :seq :initform 0 :reader seq)
   (forwarded :initform 0 :accessor forwarded)
   (forwarded-at :initform 0 :accessor forwarded-at))
  (:documentation "Keeps the first CAP UTF-8 bytes written to it and counts the rest."))

(deftype octets () '(simple-array (unsigned-byte 8) (*)))

(defun make-octets (n)
  (make-array n :element-type '(unsigned-byte 8)))

(defstruct (utf8 (:constructor utf8 (octets end)))
  "Text already encoded: OCTETS up to END.  The JSON writer copies it as it is."
  (octets nil :type octets) (end 0 :type fixnum))

(declaim (inline octets))
(defun octets (char)
  "Length of CHAR in UTF-8."
  (let ((code (char-code char)))
    (cond ((< code #x80) 1) ((< code #x800) 2) ((< code #x10000) 3) (t 4))))

(defmacro specializing ((string) &body body)
  "BODY, compiled once for each kind of simple string STRING may be: fast loops."
  `(etypecase ,string
     ((simple-array character (*)) ,@body)
     (simple-base-string ,@body)))

(defun fit (string start end room)
  "The index up to which STRING's characters fit in ROOM bytes, and their bytes."
  (declare (fixnum start end room) (optimize speed))
  (specializing (string)
    (do ((i start (1+ i)) (bytes 0))
        ((= i end) (values end bytes))
      (declare (fixnum i bytes))
      (let ((next (+ bytes (octets (schar string i)))))
        (when (> next room) (return (values i bytes)))
        (setf bytes next)))))

(defun last-newline (string start end)
  (declare (optimize speed))
  (specializing (string)
    (position #\Newline string :start start :end end :from-end t)))

(defun space-left (s)
  ;; Once something was dropped nothing more is kept: the text stays a prefix.
  (cond ((plusp (dropped s)) 0)
        ((cap s) (- (cap s) (kept s)))
        (t most-positive-fixnum)))

(defun overflow (s bytes)
  (incf (dropped s) bytes)
  (when (strict s) (throw s nil)))

(declaim (inline encode))
(defun encode (code octets i)
  "Put CODE's UTF-8 at I in OCTETS (a lone surrogate as U+FFFD); the next index."
  (declare (type (integer 0 #x10FFFF) code) (type octets octets) (fixnum i))
  (when (<= #xD800 code #xDFFF) (setf code #xFFFD))
  (macrolet ((put (&rest bytes)
               `(progn ,@(loop for b in bytes for k from 0
                               collect `(setf (aref octets (+ i ,k)) ,b))
                       (+ i ,(length bytes)))))
    (cond ((< code #x80) (put code))
          ((< code #x800) (put (logior #xC0 (ash code -6)) (logior #x80 (logand code #x3F))))
          ((< code #x10000) (put (logior #xE0 (ash code -12))
                                 (logior #x80 (logand (ash code -6) #x3F))
                                 (logior #x80 (logand code #x3F))))
          (t (put (logior #xF0 (ash code -18)) (logior #x80 (logand (ash code -12) #x3F))
                  (logior #x80 (logand (ash code -6) #x3F)) (logior #x80 (logand code #x3F)))))))

(defun append-text (s string start end bytes)
  "Encode STRING's characters from START to END, BYTES of UTF-8, into S's buffer."
  (declare (fixnum start end bytes) (optimize speed))
  (let* ((buffer (buffer s))
         (fill (fill-index s))
         (new-fill (+ fill bytes)))
    (declare (type octets buffer) (fixnum fill new-fill))
    (when (> new-fill (length buffer))
      (setf buffer (replace (make-octets (max new-fill (* 2 (length buffer)))) buffer :end2 fill)
            (buffer s) buffer))
    (specializing (string)
      (loop for i of-type fixnum from start below end
            do (setf fill (encode (char-code (schar string i)) buffer fill))))
    (setf (fill-index s) new-fill)))

(declaim (ftype function send))         ; with the frame code below

(defun maybe-forward (s &optional now-p)
  "Send what S kept since the last interim frame: all of it at once with NOW-P
(the user's FINISH-OUTPUT) or past 4 KB; else, at most every 200 ms, whole lines."
  (when (and (forward s) (> (fill-index s) (forwarded s)))
    (let* ((now (get-internal-real-time))
           (end (cond ((or now-p (>= (- (fill-index s) (forwarded s)) 4096)) (fill-index s))
                      ((>= (- now (forwarded-at s)) (floor internal-time-units-per-second 5))
                       (let ((newline (position 10 (buffer s) :start (forwarded s)
                                                :end (fill-index s) :from-end t)))
                         (and newline (1+ newline)))))))
      (when end
        (let ((text (utf8 (subseq (buffer s) (forwarded s) end) (- end (forwarded s)))))
          (setf (forwarded s) end
                (forwarded-at s) now)
          (send `(:object ("seq" . ,(seq s)) ("output" . ,(forward s)) ("text" . ,text))))))))

(defmethod sb-gray:stream-write-string ((s capture) string &optional (start 0) end)
  (let* ((simple (coerce string 'simple-string))
         (end (or end (length simple))))
    (multiple-value-bind (stop bytes) (fit simple start end (space-left s))
      (append-text s simple start stop bytes)
      (incf (kept s) bytes)
      ;; The column of what was kept: after a drop nothing more is kept anyway.
      (let ((newline (last-newline simple start stop)))
        (setf (column s) (if newline (- stop newline 1) (+ (column s) (- stop start)))))
      (maybe-forward s)
      (when (< stop end)
        ;; A strict capture is about to stop the printer: its count is a lower bound.
        (overflow s (if (strict s)
                        (- end stop)
                        (nth-value 1 (fit simple stop end most-positive-fixnum)))))))
  string)

(defmethod sb-gray:stream-write-char ((s capture) char)
  (setf (column s) (if (char= char #\Newline) 0 (1+ (column s))))
  (let ((bytes (octets char)))
    (cond ((<= bytes (space-left s))
           (let ((buffer (buffer s)) (fill (fill-index s)))
             (when (> (+ fill bytes) (length buffer))
               (setf buffer (replace (make-octets (* 2 (+ fill bytes))) buffer :end2 fill)
                     (buffer s) buffer))
             (setf (fill-index s) (encode (char-code char) buffer fill)))
           (incf (kept s) bytes)
           (maybe-forward s))
          (t (overflow s bytes))))
  char)

(defmethod sb-gray:stream-finish-output ((s capture))
  (maybe-forward s t))

(defmethod sb-gray:stream-force-output ((s capture))
  (maybe-forward s t))

(defmethod sb-gray:stream-line-column ((s capture))
  (column s))

(defun captured (s)
  "What S kept, for the reply."
  (utf8 (buffer s) (fill-index s)))

(defun captured-string (s)
  (sb-ext:octets-to-string (buffer s) :end (fill-index s) :external-format :utf-8))

;;; Printing values, conditions and frames

(defun type-name (condition)
  "CONDITION's class name as PRIN1 prints it from CL-USER."
  (with-standard-io-syntax (prin1-to-string (class-name (class-of condition)))))

(defun bounded (cap function)
  "What FUNCTION writes to the stream it gets, cut after about CAP bytes (marked
\" ...\"); an error while writing ends the text with a placeholder."
  (let ((s (make-instance 'capture :cap cap :strict t)))
    (catch s
      (handler-case (funcall function s)
        (error () (write-string " #<error printing>" s))))
    (if (plusp (dropped s))
        (concatenate 'string (captured-string s) " ...")
        (captured-string s))))

(defun report (condition &optional brief)
  "CONDITION's report (a type error's can hold a huge datum: at most 64 KB).  BRIEF
leaves out what a simple condition adds to its format control (a reader error's
\"Stream: ...\": the reply says where instead)."
  (bounded 65536 (lambda (s)
                   (if (and brief (typep condition 'simple-condition))
                       (apply #'format s (simple-condition-format-control condition)
                              (simple-condition-format-arguments condition))
                       (princ condition s)))))

(defun printed-size (string)
  "The bytes PRIN1 makes of STRING: its characters, the quotes and the escapes."
  (declare (optimize speed))
  (let ((string (coerce string 'simple-string)) (bytes 2))
    (declare (fixnum bytes))
    (specializing (string)
      (loop for char across string
            do (incf bytes (case char ((#\" #\\) 2) (t (octets char))))))
    bytes))

(defun print-value (value cap)
  "PRIN1 VALUE into a capture of CAP bytes; return the text and the bytes dropped."
  (let ((s (make-instance 'capture :cap cap :strict t))
        (*print-circle* t)
        (*print-length* (or *print-length* 1000))
        (*print-level* (or *print-level* 100)))
    (handler-case (catch s (prin1 value s))
      (error (e)
        (setf s (make-instance 'capture :cap cap))
        (format s "#<error printing object: ~A>" (report e))))
    ;; Printing stopped at the cap, so the bytes dropped are only a lower bound,
    ;; except for a string, whose printed size is cheap to know.
    (values (captured s)
            (if (and (stringp value) (plusp (dropped s)))
                (- (printed-size value) (kept s))
                (dropped s)))))

(defun frame-key (frame)
  "The symbol naming FRAME's function (or the function it is local to), or a string."
  (let ((name (sb-di:debug-fun-name (sb-di:frame-debug-fun frame))))
    (loop while (consp name)
          do (setf name (if (member :in name) (car (last name)) (second name))))
    name))

(defparameter *machinery*
  '(signal error cerror break invoke-debugger sb-kernel::%signal sb-kernel:internal-error
    sb-kernel:with-simple-condition-restarts sb-int:%break sb-debug::run-hook
    sb-kernel::heap-exhausted-error sb-kernel::control-stack-exhausted-error sb-vm::alloc-tramp
    sb-sys:invoke-interruption sb-unix::run-handler)
  "Functions between the user's code and a handler: the top of a backtrace.")

(defparameter *plumbing*
  '(eval sb-int:simple-eval-in-lexenv sb-impl::%simple-eval (lambda ()))
  "Functions between the agent and the user's code: the bottom of a backtrace.
(LAMBDA ()) is the toplevel form as EVAL compiled it.")

(defun user-frames ()
  "Up to 20 frames of the user's code, innermost last."
  (let ((frames '()))                   ; collected innermost first, so pushed last
    (block walk
      (sb-debug::map-backtrace
       (lambda (frame)
         (let ((key (frame-key frame)))
           (cond ((and key (symbolp key)  ; the agent's own: above or below the user's
                       (eq (symbol-package key) (load-time-value (find-package "LISPMCP-AGENT"))))
                  (when frames (return-from walk)))
                 ((and (stringp key) (search "foreign function" key))) ; never the user's
                 ((and (null frames) (member key *machinery*)))
                 ;; Enough, with room for the plumbing dropped below.
                 ((> (length frames) 25) (return-from walk))
                 (t (push frame frames)))))))
    (loop while (and frames (member (sb-di:debug-fun-name (sb-di:frame-debug-fun (first frames)))
                                    *plumbing* :test #'equal))
          do (pop frames))
    (last frames 20)))

(defun frame-string (frame package)
  "FRAME as a backtrace line: one line, at most about 1000 bytes."
  (with-standard-io-syntax
    (let ((*package* package) (*print-readably* nil) (*print-circle* t)
          (*print-length* 10) (*print-level* 4))
      (bounded 1000 (lambda (s) (sb-debug::print-frame-call frame s))))))

(defun backtrace ()
  (loop for frame in (reverse (user-frames))
        for i from 0
        collect (format nil "~D: ~A" i (frame-string frame *package*))))

;;; Evaluation

(defvar *evaluating* nil
  "True while the user's code runs or its values print.")

(defun on-sigint (signal info context)
  "SIGINT is how the server stops an evaluation (timeout, cancellation).  Like
SBCL's own handler, signal INTERACTIVE-INTERRUPT in the interrupted code; unlike it,
never enter the debugger: a SIGINT that comes while the worker is idle (the server's
timeout racing the reply) is ignored.  SBCL's handler also nests a level per signal
and dies after 8 that come in quick succession."
  (declare (ignore signal info))
  (when *evaluating*
    (sb-sys:with-interrupts
      (let ((context (sb-alien:sap-alien context (* sb-sys:os-context-t))))
        (signal 'sb-sys:interactive-interrupt
                :context context :address (sb-sys:sap-int (sb-vm:context-pc context)))))))

(defun counters ()
  "Monotonic ns, run time µs, GC µs, bytes consed."
  (multiple-value-bind (sec nsec) (sb-unix::clock-gettime 1)
    (vector (+ (* sec 1000000000) nsec) (get-internal-run-time)
            sb-ext:*gc-run-time* (sb-ext:get-bytes-consed))))

(defun restore-sane-globals ()
  "Repair what would make every later call fail to read."
  (unless (and (packagep *package*) (package-name *package*))
    (setf *package* (find-package "COMMON-LISP-USER")))
  (unless (typep *readtable* 'readtable)
    (setf *readtable* (copy-readtable nil))))

(defun line-and-column (string position)
  (let ((start (1+ (or (position #\Newline string :end position :from-end t) -1))))
    (values (1+ (count #\Newline string :end position)) (1+ (- position start)))))

(defun failure (condition phase code position)
  "The reply's \"error\" object for CONDITION."
  `(:object ("type" . ,(type-name condition))
            ("message" . ,(report condition (eq phase :read)))
            ("backtrace" . ,(coerce (if (eq phase :eval) (backtrace) '()) 'vector))
            ("phase" . ,(if (eq phase :read) "read" "eval"))
            ,@(when (eq phase :read)
                (multiple-value-bind (line column) (line-and-column code position)
                  `(("position" . ,position) ("line" . ,line) ("column" . ,column))))))

(defun evaluate (code package-name timing-p output-cap value-cap stream-seq)
  "Read and evaluate the forms of CODE one by one; return the reply's fields.
With STREAM-SEQ, output is also sent as it is written, in interim frames."
  (restore-sane-globals)
  (let* ((out (make-instance 'capture :cap output-cap :seq stream-seq
                                      :forward (and stream-seq "stdout")))
         (err (make-instance 'capture :cap output-cap :seq stream-seq
                                      :forward (and stream-seq "stderr")))
         (io (make-two-way-stream (make-string-input-stream "") out))
         (code-stream (make-string-input-stream code))
         (warnings '()) (warnings-dropped 0) (results '()) (printed '()) (value-bytes 0)
         (phase :setup) (form-start 0) (failed nil) (interrupted nil)
         (start (when timing-p (counters))) (timing nil))
    (flet ((stop-timing ()
             (when (and start (not timing))
               (setf timing (map 'vector #'- (counters) start)))))
      (block run
        (flet ((fail (condition)
                 ;; The first failure wins; a SIGINT that comes meanwhile waits
                 ;; (rather than nest) and then unwinds with it.
                 (sb-sys:without-interrupts
                   (unless failed
                     (stop-timing)
                     ;; Where a read failed: the start of an incomplete form (end
                     ;; of file), else the last character the reader consumed.
                     (let ((position (if (typep condition 'end-of-file)
                                         form-start
                                         (max form-start (1- (file-position code-stream))))))
                       (setf failed (failure condition phase code position)
                             interrupted (typep condition 'sb-sys:interactive-interrupt)))))
                 (return-from run)))
          (handler-bind ((warning (lambda (w)
                                    (if (< (length warnings) 100)
                                        (push `(:object ("type" . ,(type-name w))
                                                        ("message" . ,(report w)))
                                              warnings)
                                        (incf warnings-dropped))
                                    (let ((muffle (find-restart 'muffle-warning w)))
                                      (when muffle (invoke-restart muffle)))))
                         (serious-condition #'fail))
            (let* ((*evaluating* t)
                   ;; BREAK and INVOKE-DEBUGGER skip the handlers: fail there too.
                   (sb-ext:*invoke-debugger-hook* (lambda (condition hook)
                                                    (declare (ignore hook))
                                                    (fail condition)))
                   (*standard-output* out) (*error-output* err) (*trace-output* err)
                   (*standard-input* (two-way-stream-input-stream io))
                   (*terminal-io* io) (*query-io* io) (*debug-io* io)
                   (package (and package-name
                                 (or (find-package (string-upcase package-name))
                                     (sb-int:find-undeleted-package-or-lose package-name)))))
              ;; *PACKAGE* is bound only for a package argument: otherwise the
              ;; user's IN-PACKAGE sets the session's current package.
              (progv (when package '(*package*)) (when package (list package))
                (loop (setf phase :read
                            form-start (progn (peek-char t code-stream nil)
                                              (file-position code-stream)))
                      (let ((form (read code-stream nil code-stream)))
                        (when (eq form code-stream) (return))
                        (setf phase :eval
                              results (multiple-value-list (eval form)))))
                (stop-timing)
                (restore-sane-globals)  ; the values print in the current package
                (setf phase :eval)
                (dolist (value results)
                  (multiple-value-bind (text dropped) (print-value value value-cap)
                    (push text printed)
                    (incf value-bytes dropped))))))))
      (restore-sane-globals)
      (flet ((count-of (key n) (when (plusp n) (list (cons key n)))))
        (let ((truncated (append (count-of "stdout" (dropped out)) (count-of "stderr" (dropped err))
                                 (count-of "values" value-bytes)
                                 (count-of "warnings" warnings-dropped))))
          `(("values" . ,(coerce (if failed '() (reverse printed)) 'vector))
            ("stdout" . ,(captured out))
            ("stderr" . ,(captured err))
            ("warnings" . ,(coerce (reverse warnings) 'vector))
            ("package" . ,(package-name *package*))
            ("timing" . ,(when timing
                           `(:object ("real-ns" . ,(aref timing 0)) ("run-us" . ,(aref timing 1))
                                     ("gc-us" . ,(aref timing 2)) ("bytes" . ,(aref timing 3)))))
            ("truncated" . ,(when truncated `(:object ,@truncated)))
            ("error" . ,failed)
            ("interrupted" . ,interrupted)))))))

;;; JSON, written as UTF-8 without the printer, so that no user setting can change it

(defstruct (obuf (:constructor make-obuf ()))
  "A frame being written: 4 bytes of header, then the JSON; the UTF8 texts the
JSON refers to as {\"blob\": k}, most recent first."
  (octets (make-octets 1024) :type octets)
  (fill 4 :type fixnum)
  (blobs '() :type list)
  (blob-count 0 :type fixnum))

(defun reserve (b n)
  "B's octets, with room for N more."
  (declare (type obuf b) (fixnum n) (optimize speed))
  (let ((need (+ (obuf-fill b) n)) (octets (obuf-octets b)))
    (if (<= need (length octets))
        octets
        (setf (obuf-octets b) (replace (make-octets (max need (* 2 (length octets)))) octets
                                       :end2 (obuf-fill b))))))

(defun put-ascii (b string)
  (declare (simple-string string))
  (let ((octets (reserve b (length string))) (fill (obuf-fill b)))
    (loop for char across string
          do (setf (aref octets fill) (char-code char)) (incf fill))
    (setf (obuf-fill b) fill)))

(defun put-run (b octets start end)
  (declare (type octets octets) (fixnum start end) (optimize speed))
  (replace (reserve b (- end start)) octets :start1 (obuf-fill b) :start2 start :end2 end)
  (incf (obuf-fill b) (- end start)))

(defun put-escape (b code)
  (case code
    (34 (put-ascii b "\\\""))
    (92 (put-ascii b "\\\\"))
    (10 (put-ascii b "\\n"))
    (9 (put-ascii b "\\t"))
    (t (put-ascii b (coerce (list #\\ #\u #\0 #\0 (char "0123456789ABCDEF" (ash code -4))
                                  (char "0123456789ABCDEF" (logand code 15)))
                            'simple-string)))))

(declaim (inline escape-p))
(defun escape-p (code)
  (or (< code #x20) (= code 34) (= code 92)))

(defun put-utf8 (b octets end)
  "Text already in UTF-8, escaped; runs without escapes are copied whole."
  (declare (type octets octets) (fixnum end) (optimize speed))
  (let ((run 0))
    (declare (fixnum run))
    (loop for i of-type fixnum from 0 below end
          when (escape-p (aref octets i))
            do (put-run b octets run i) (put-escape b (aref octets i)) (setf run (1+ i)))
    (put-run b octets run end)))

(defparameter *blob-threshold* 1024
  "UTF8 texts this long or longer go as blobs: for a few bytes, a JSON string is
cheaper for the server than a blob's reference.")

(defun put-string (b string)
  "A Lisp string, encoded and escaped."
  (let ((string (coerce string 'simple-string)))
    (specializing (string)
      (loop for char across string
            do (let ((code (char-code char)))
                 (if (escape-p code)
                     (put-escape b code)
                     (setf (obuf-fill b) (encode code (reserve b 4) (obuf-fill b)))))))))

(defun put-decimal (b n)
  (when (minusp n) (put-ascii b "-") (setf n (- n)))
  (multiple-value-bind (q r) (floor n 10)
    (when (plusp q) (put-decimal b q))
    (setf (aref (reserve b 1) (obuf-fill b)) (+ 48 r))
    (incf (obuf-fill b))))

(defun write-json (x b)
  "Write X into B: a string or UTF8, integer, T (true), vector (array) or
(:object (key . value)...); members whose value is NIL are left out."
  (etypecase x
    (utf8 (cond ((< (utf8-end x) *blob-threshold*)
                 (put-ascii b "\"") (put-utf8 b (utf8-octets x) (utf8-end x)) (put-ascii b "\""))
                (t
                 (put-ascii b "{\"blob\":") (put-decimal b (obuf-blob-count b)) (put-ascii b "}")
                 (push x (obuf-blobs b))
                 (incf (obuf-blob-count b)))))
    (string (put-ascii b "\"") (put-string b x) (put-ascii b "\""))
    (integer (put-decimal b x))
    ((eql t) (put-ascii b "true"))
    (vector (put-ascii b "[")
     (loop for e across x for i from 0
           do (when (plusp i) (put-ascii b ",")) (write-json e b))
     (put-ascii b "]"))
    (cons (put-ascii b "{")
     (loop for (key . value) in (remove nil (rest x) :key #'cdr) for i from 0
           do (when (plusp i) (put-ascii b ","))
              (write-json key b) (put-ascii b ":") (write-json value b))
     (put-ascii b "}"))))

;;; Giving memory back

;;; SBCL 2.2.9's gencgc hands free pages back to the kernel (madvise MADV_DONTNEED)
;;; only at the end of a collection that reached generation 2 (the runtime's
;;; small_generation_limit, 1).  A nursery collection leaves the pages it freed
;;; resident, to be zeroed and reused, and the first one comes only after
;;; (bytes-consed-between-gcs) (5% of the dynamic space) was consed: a session that
;;; defined 100 functions (~11 MB consed) kept all of it.  So once a request has
;;; consed a little and the worker has been idle a moment, collect the nursery
;;; with that limit at 0: the garbage goes and the runtime returns every free page.
;;; Not between requests that come back to back: pages given back cost page faults
;;; when they are used again (~0.5 ms a MB here, up to the nursery's size).
;;; Garbage that was promoted stays until its generation is collected, unless the
;;; heap doubled since the last full collection: then do one (amortized, as the live
;;; data doubles in between).  The wait is a poll on fd 3, made only when due.

(defparameter *release-after-bytes* (* 1024 1024)
  "Give memory back once this many bytes were consed since it was last done (or the
heap doubled)...")
(defparameter *release-after-idle* 250
  "...and the worker has then waited this many milliseconds for a request.")
(defvar *consed-at-release* 0)
(defvar *usage-after-full-gc* 0)

(defun release-memory ()
  (symbol-macrolet ((limit (sb-alien:extern-alien "small_generation_limit" sb-alien:char)))
    (let ((old limit))
      (setf limit 0)
      (unwind-protect (sb-ext:gc)
        (setf limit old))))
  (when (> (sb-kernel:dynamic-usage) (* 2 *usage-after-full-gc*))
    (sb-ext:gc :full t)
    (setf *usage-after-full-gc* (sb-kernel:dynamic-usage)))
  (setf *consed-at-release* (sb-ext:get-bytes-consed)))

(defun release-due-p ()
  (or (> (- (sb-ext:get-bytes-consed) *consed-at-release*) *release-after-bytes*)
      (> (sb-kernel:dynamic-usage) (* 2 *usage-after-full-gc*))))

;;; Frames: requests in on fd 3, replies out on fd 4, read and written with
;;; plain system calls: an fd-stream
;;; polls before every read, two more system calls per request.

(defun bye ()
  (sb-ext:exit :code 0 :abort t))

(defun u32 (octets i)
  (logior (ash (aref octets i) 24) (ash (aref octets (+ i 1)) 16)
          (ash (aref octets (+ i 2)) 8) (aref octets (+ i 3))))

(defvar *in* (make-octets 65536) "Bytes read from fd 3: *IN-START* to *IN-END* unused.")
(defvar *in-start* 0)
(defvar *in-end* 0)

(defun read-at-least (n)
  "Make N bytes available from *IN-START*; end of file ends the worker."
  (when (> (+ *in-start* n) (length *in*))  ; move what is left to the front
    (setf *in* (replace (if (> n (length *in*)) (make-octets n) *in*) *in*
                        :start2 *in-start* :end2 *in-end*)
          *in-end* (- *in-end* *in-start*)
          *in-start* 0))
  (when (and (= *in-start* *in-end*) (release-due-p)
             (not (sb-unix:unix-simple-poll 3 :input *release-after-idle*)))
    (release-memory))                    ; idle a moment after consing: see above
  (loop while (< (- *in-end* *in-start*) n)
        do (multiple-value-bind (count errno)
               (sb-sys:with-pinned-objects (*in*)
                 (sb-unix:unix-read 3 (sb-sys:sap+ (sb-sys:vector-sap *in*) *in-end*)
                                    (- (length *in*) *in-end*)))
             (cond ((and count (plusp count)) (incf *in-end* count))
                   ((and (null count) (= errno sb-unix:eintr)))
                   (t (bye))))))

(defun receive ()
  "The next frame's payload; an oversized frame ends the worker."
  (read-at-least 4)
  (let ((n (u32 *in* *in-start*)))
    (when (> n (expt 2 30)) (bye))
    (read-at-least (+ 4 n))
    (prog1 (subseq *in* (+ *in-start* 4) (+ *in-start* 4 n))
      (incf *in-start* (+ 4 n))
      (when (= *in-start* *in-end*)
        (setf *in-start* 0 *in-end* 0)))))

(defvar *send-lock* (sb-thread:make-mutex :name "fd 4")
  "Frames go out whole: user threads may write to a capture too.")

(defun put-u32 (b n)
  (let ((octets (reserve b 4)) (i (obuf-fill b)))
    (setf (aref octets i) (ldb (byte 8 24) n) (aref octets (+ i 1)) (ldb (byte 8 16) n)
          (aref octets (+ i 2)) (ldb (byte 8 8) n) (aref octets (+ i 3)) (ldb (byte 8 0) n))
    (incf (obuf-fill b) 4)))

(defun write-fd (octets end)
  (loop with start = 0
        while (< start end)
        do (multiple-value-bind (count errno) (sb-unix:unix-write 4 octets start (- end start))
             (cond (count (incf start count))
                   ((/= errno sb-unix:eintr) (bye))))))

(defun send (json)
  "Write JSON as one frame: the JSON text, then, after a NUL, its blobs, each a
length and the octets; small ones are copied into the buffer, large ones written
from where they are."
  (let ((b (make-obuf)))
    (write-json json b)
    (let* ((blobs (reverse (obuf-blobs b)))
           (json-end (obuf-fill b))
           (size (+ (- json-end 4)
                    (if blobs (1+ (loop for x in blobs sum (+ 4 (utf8-end x)))) 0))))
      (setf (obuf-fill b) 0)
      (put-u32 b size)
      (setf (obuf-fill b) json-end)
      (when blobs (put-ascii b (string (code-char 0))))
      (sb-thread:with-mutex (*send-lock*)
        (sb-sys:without-interrupts          ; a SIGINT must not tear a frame
          (dolist (x blobs)
            (put-u32 b (utf8-end x))
            (if (< (utf8-end x) 65536)
                (put-run b (utf8-octets x) 0 (utf8-end x))
                (progn (write-fd (obuf-octets b) (obuf-fill b))
                       (setf (obuf-fill b) 0)
                       (write-fd (utf8-octets x) (utf8-end x)))))
          (write-fd (obuf-octets b) (obuf-fill b)))))))

(defun serve (frame)
  "The reply to one request frame."
  (let* ((n (length frame))
         (package-end (when (>= n 22) (+ 18 (u32 frame 14))))
         (code-start (when package-end (+ package-end 4))))
    (if (and code-start (= (aref frame 0) #x45) (<= code-start n)
             (= (u32 frame package-end) (- n code-start)))
        (flet ((text (start end)
                 (sb-ext:octets-to-string frame :start start :end end
                                                :external-format `(:utf-8 :replacement ,(code-char #xFFFD)))))
          (let ((package (text 18 package-end))
                (seq (u32 frame 1))
                (cap (u32 frame 6))
                (value-cap (u32 frame 10)))
            `(:object ("seq" . ,seq)
                      ,@(evaluate (text code-start n) (when (plusp (length package)) package)
                                  (logbitp 0 (aref frame 5))
                                  (when (plusp cap) cap) (when (plusp value-cap) value-cap)
                                  (when (logbitp 1 (aref frame 5)) seq)))))
        '(:object ("seq" . 0)
          ("error" :object ("type" . "PROTOCOL-ERROR")
           ("message" . "malformed request: expected an E frame as in worker-protocol.md"))))))

(defun main ()
  "The worker's toplevel: serve requests on fd 3 until it reaches end of file."
  (sb-ext:disable-debugger)
  (sb-sys:enable-interrupt sb-unix:sigint #'on-sigint)
  (dolist (fd '(3 4))                    ; not for the user's child processes
    (sb-alien:alien-funcall
     (sb-alien:extern-alien "fcntl" (function sb-alien:int sb-alien:int sb-alien:int sb-alien:int))
     fd 2 1))                            ; F_SETFD, FD_CLOEXEC
  ;; Dying with the server is arranged before exec (src/sandbox.c).
  (setf *consed-at-release* (sb-ext:get-bytes-consed)
        *usage-after-full-gc* (sb-kernel:dynamic-usage))
  (send `(:object ("hello" . 1) ("pid" . ,(sb-unix:unix-getpid))
                  ("lisp" . ,(format nil "~A ~A" (lisp-implementation-type)
                                     (lisp-implementation-version)))))
  (loop (send (serve (receive)))))

(defun request-frame (code)
  "An evaluate request payload for CODE (timing on, no caps, current package)."
  (let* ((octets (sb-ext:string-to-octets code :external-format :utf-8))
         (n (length octets))
         (frame (make-array (+ 22 n) :element-type '(unsigned-byte 8) :initial-element 0)))
    (setf (aref frame 0) #x45            ; E, seq 0
          (aref frame 5) 1               ; measure timing
          (aref frame 18) (ldb (byte 8 24) n) (aref frame 19) (ldb (byte 8 16) n)
          (aref frame 20) (ldb (byte 8 8) n) (aref frame 21) (ldb (byte 8 0) n))
    (replace frame octets :start1 22)))

(defun warm-up ()
  "Serve a few requests before the core is saved: the first one a fresh image
serves otherwise fills PCL's dispatch caches and the external-format tables on
the way, 15 ms that every new session would wait for."
  (dolist (code '("(+ 1 2)"
                  "(progn (format t \"o~%\") (princ #\\e *error-output*) (warn \"w\")
                          (values 1 \"s\" 'x 1.5 (list 1 2)))"
                  "(error \"e\")"
                  "(+ 1"))
    (write-json (serve (request-frame code)) (make-obuf))))

(defun save-core (path)
  "Save the worker core to PATH, with MAIN as its toplevel."
  (ensure-directories-exist path)
  (warm-up)
  (sb-ext:save-lisp-and-die path :toplevel #'main :executable nil))

;;; User code must not redefine the agent by accident.
(sb-ext:lock-package :lispmcp-agent)
