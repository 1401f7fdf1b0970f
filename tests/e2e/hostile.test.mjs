// Hostile and unlucky user code: the image exits or crashes, writes to its own fds, redefines
// things, loops forever, ignores interrupts, exhausts the stack or the heap; garbage on the
// protocol stream; timeouts and cancellation. The server must survive all of it and keep its
// promises (INTERFACE.md: sessions, timeouts, console output).

import { test as nodeTest, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer,
  evaluate,
  evalOk,
  evalValue,
  createSession,
  assertOk,
  assertToolError,
  value,
  text,
  describeResult,
  withStderr,
  RawServer,
  makeRng,
  sleep,
  childPids,
  isAlive,
  cmdline,
  lispString,
  McpError,
} from './helpers.mjs';

let srv;
const extra = [];
const test = withStderr(nodeTest, () => [srv, ...extra]);
const rng = makeRng('hostile.test.mjs');

before(async () => {
  srv = await startServer({ args: ['--eval-timeout', '30'] });
});
after(async () => {
  await srv?.close();
  for (const s of extra) await s.close();
});

const DIED = /die|dead|exit|terminat|crash|kill/i;

/** The call after a death: works in a fresh image, says so once. */
async function expectFreshWithNotice(session, probeVar) {
  const r = await evaluate(srv, `(list (+ 1 2) (boundp '${probeVar}))`, { session });
  assertOk(r, 'first call after the image died');
  assert.equal(value(r), '(3 NIL)', 'fresh image: the old definitions are gone');
  const notice = r.structuredContent.notice;
  assert.equal(typeof notice, 'string', `the first call after a death must carry a notice: ${describeResult(r)}`);
  assert.match(notice, /lost|fresh|restart|new|died/i, notice);
  const r2 = await evaluate(srv, '(+ 2 2)', { session });
  assertOk(r2);
  assert.equal(value(r2), '4');
  assert.equal(r2.structuredContent.notice, undefined, 'the notice is given once only');
}

// ---------------------------------------------------------------------------
describe('the image dies', () => {
  for (const [label, code] of [
    ['(sb-ext:exit)', '(sb-ext:exit)'],
    ['(sb-ext:exit :abort t)', '(sb-ext:exit :abort t)'],
    ['(sb-ext:exit :code 3 :abort t)', '(sb-ext:exit :code 3 :abort t)'],
    ['_exit(7) from C, no Lisp unwinding', '(sb-alien:alien-funcall (sb-alien:extern-alien "_exit" (function sb-alien:void sb-alien:int)) 7)'],
  ]) {
    test(`${label}: error with session-state "lost", notice on the next call, others untouched`, { timeout: 90_000 }, async () => {
      const victim = await createSession(srv, 'victim');
      const bystander = await createSession(srv, 'bystander');
      await evalOk(srv, '(defvar *victim-var* 1)', { session: victim });
      await evalOk(srv, '(defvar *bystander-var* 99)', { session: bystander });
      await evalOk(srv, '(defvar *default-var* 7)');

      const r = await evaluate(srv, code, { session: victim });
      const e = assertToolError(r, code);
      assert.equal(e['session-state'], 'lost', JSON.stringify(e));
      assert.match(e.message, DIED, `the message should say the image died: ${e.message}`);
      assert.match(text(r), /\[ERROR\]/);

      // the server is alive and other sessions are untouched
      assert.equal(await evalValue(srv, '*bystander-var*', { session: bystander }), '99');
      assert.equal(await evalValue(srv, '*default-var*'), '7');
      await expectFreshWithNotice(victim, '*victim-var*');
    });
  }

  test('the default session can die and come back too', { timeout: 60_000 }, async () => {
    await evalOk(srv, '(defvar *dflt-victim* 1)');
    const e = assertToolError(await evaluate(srv, '(sb-ext:exit :abort t)'));
    assert.equal(e['session-state'], 'lost');
    await expectFreshWithNotice('default', '*dflt-victim*');
  });

  test('a worker killed from outside while idle: next call works in a fresh image with a notice', { timeout: 60_000 }, async () => {
    // a server of its own, without a pool, so that its only sbcl child is the default session's worker
    const own = await startServer({ args: ['--pool-size', '0'] });
    extra.push(own);
    await evalOk(own, '(defvar *outside* 1)');
    const kids = childPids(own.pid).filter((p) => /sbcl/.test(cmdline(p)));
    assert.equal(kids.length, 1, `expected one sbcl worker under ${own.pid}: ${kids.map((p) => `${p}:${cmdline(p)}`)}`);
    const pid = kids[0];
    process.kill(pid, 'SIGKILL');
    await sleep(300);
    // either this call reports the loss, or it already runs in the fresh image with the notice
    let r = await evaluate(own, "(list (+ 1 2) (boundp '*outside*))");
    if (r.isError) {
      assert.equal(r.structuredContent.error['session-state'], 'lost', describeResult(r));
      assert.match(r.structuredContent.error.message, DIED);
      r = await evaluate(own, "(list (+ 1 2) (boundp '*outside*))");
    }
    assertOk(r);
    assert.equal(value(r), '(3 NIL)');
    assert.equal(typeof r.structuredContent.notice, 'string', describeResult(r));
    assert.ok(!isAlive(pid));
  });

  test('a memory fault (reading address 0) is an error; the session keeps working', { timeout: 60_000 }, async () => {
    const s = await createSession(srv, 'segv');
    await evalOk(srv, '(defvar *segv-var* 8)', { session: s });
    const e = assertToolError(await evaluate(srv, '(sb-sys:sap-ref-8 (sb-sys:int-sap 0) 0)', { session: s }));
    assert.ok(['kept', 'lost'].includes(e['session-state']), JSON.stringify(e));
    const v = await evaluate(srv, "(if (boundp '*segv-var*) *segv-var* :fresh)", { session: s });
    assertOk(v);
    if (e['session-state'] === 'kept') assert.equal(value(v), '8');
    else assert.equal(typeof v.structuredContent.notice, 'string');
  });

  test('control stack exhaustion: an error, and the session keeps working', { timeout: 60_000 }, async () => {
    const s = await createSession(srv, 'deep');
    await evalOk(srv, '(defvar *deep-var* 5) (defun deep (n) (1+ (deep (1+ n))))', { session: s });
    const e = assertToolError(await evaluate(srv, '(deep 0)', { session: s }));
    assert.match(e.type, /STORAGE-CONDITION|CONTROL-STACK-EXHAUSTED|STACK/i, JSON.stringify(e).slice(0, 500));
    const v = await evaluate(srv, "(if (boundp '*deep-var*) *deep-var* :fresh)", { session: s });
    assertOk(v);
    if (e['session-state'] === 'kept') assert.equal(value(v), '5');
  });

  test('heap exhaustion (--session-memory-mb 256): an error, the server survives, the session comes back', { timeout: 120_000 }, async () => {
    const small = await startServer({ args: ['--session-memory-mb', '256', '--eval-timeout', '60'] });
    extra.push(small);
    await evalOk(small, '(defvar *hog* nil)');
    const r = await evaluate(small, '(loop (push (make-array 1000000 :element-type (quote double-float)) *hog*))');
    const e = assertToolError(r, 'heap hog');
    assert.ok(['kept', 'lost'].includes(e['session-state']), JSON.stringify(e));
    if (e['session-state'] === 'kept') await evalOk(small, '(setf *hog* nil)');
    const r2 = await evaluate(small, '(progn (sb-ext:gc :full t) (+ 20 22))');
    assertOk(r2, 'after heap exhaustion');
    assert.equal(value(r2), '42');
    if (e['session-state'] === 'lost') assert.equal(typeof r2.structuredContent.notice, 'string');
  });
});

// ---------------------------------------------------------------------------
describe('output outside Lisp streams', () => {
  // Lisp strings are UTF-32 inside SBCL: write octets, not the string itself.
  const writeFd = (fd, str) =>
    `(let ((o (sb-ext:string-to-octets ${lispString(str)} :external-format :utf-8))) (sb-unix:unix-write ${fd} o 0 (length o)))`;

  async function consoleSeen(first, session, needle) {
    let seen = first.structuredContent.console ?? '';
    assert.ok(typeof seen === 'string', `console must be a string: ${JSON.stringify(first.structuredContent.console)}`);
    for (let i = 0; i < 3 && !seen.includes(needle); i++) {
      await sleep(250);
      const r = await evalOk(srv, 'nil', { session });
      seen += r.structuredContent.console ?? '';
    }
    return seen;
  }

  test('a write(2) to fd 1 shows up as console, not on the protocol stream', async () => {
    const s = await createSession(srv, 'fd1');
    const r = await evalOk(srv, `(progn ${writeFd(1, 'hi-from-fd1')} 42)`, { session: s });
    assert.deepEqual(r.structuredContent.values, ['42']);
    assert.equal(r.structuredContent.stdout, '');
    const seen = await consoleSeen(r, s, 'hi-from-fd1');
    assert.ok(seen.includes('hi-from-fd1'), `console never showed it: ${JSON.stringify(seen)}`);
    assert.deepEqual(srv.errors.map(String), [], 'the SDK saw no protocol errors');
  });

  test('the issue\'s literal example (sb-unix:unix-write 1 "hi-from-fd1" 0 11) keeps the protocol intact', async () => {
    // (this writes 11 bytes of SBCL's UTF-32 string storage, NULs included)
    const s = await createSession(srv, 'fd1-literal');
    const r = await evalOk(srv, '(progn (sb-unix:unix-write 1 "hi-from-fd1" 0 11) 42)', { session: s });
    assert.deepEqual(r.structuredContent.values, ['42']);
    const seen = await consoleSeen(r, s, 'h');
    assert.ok(seen.includes('h'), `console never showed it: ${JSON.stringify(seen)}`);
    assert.equal(await evalValue(srv, '(+ 1 2)', { session: s }), '3');
    assert.deepEqual(srv.errors.map(String), []);
  });

  test('a write(2) to fd 2 shows up as console too', async () => {
    const s = await createSession(srv, 'fd2');
    const r = await evalOk(srv, `(progn ${writeFd(2, 'hi-from-fd2')} 43)`, { session: s });
    assert.deepEqual(r.structuredContent.values, ['43']);
    const seen = await consoleSeen(r, s, 'hi-from-fd2');
    assert.ok(seen.includes('hi-from-fd2'), `console never showed it: ${JSON.stringify(seen)}`);
  });

  test('invalid UTF-8 and control bytes written to fd 1 still give valid JSON', async () => {
    const s = await createSession(srv, 'fd1-binary');
    const r = await evalOk(
      srv,
      "(progn (sb-unix:unix-write 1 (make-array 8 :element-type '(unsigned-byte 8) :initial-contents '(255 254 0 27 91 50 74 10)) 0 8) :bin)",
      { session: s },
    );
    assert.deepEqual(r.structuredContent.values, [':BIN']);
    await sleep(200);
    assert.equal(await evalValue(srv, '(+ 1 2)', { session: s }), '3');
    assert.deepEqual(srv.errors.map(String), []);
  });

  test('a child process writing to the inherited stdout shows up as console', async () => {
    const s = await createSession(srv, 'child');
    const r = await evalOk(srv, '(progn (sb-ext:run-program "/bin/echo" (list "hi-from-child") :output t) 44)', { session: s });
    assert.deepEqual(r.structuredContent.values, ['44']);
    const seen = await consoleSeen(r, s, 'hi-from-child');
    assert.ok(seen.includes('hi-from-child'), `console never showed it: ${JSON.stringify(seen)}`);
    assert.deepEqual(srv.errors.map(String), []);
  });

  test('a fake JSON-RPC response written to fd 1 is not taken for a real one (raw)', { timeout: 60_000 }, async () => {
    const raw = new RawServer();
    extra.push(raw);
    await raw.initialize();
    const fake = '{"jsonrpc":"2.0","id":999,"result":{"hacked":true}}\n';
    const r = await raw.callTool('evaluate-lisp', { code: `(progn ${writeFd(1, fake)} ${writeFd(1, fake)} :wrote)` });
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
    assert.deepEqual(r.result.structuredContent.values, [':WROTE']);
    await sleep(300);
    const pong = await raw.request('ping', {}, { id: 999 });
    assert.deepEqual(pong.result, {}, JSON.stringify(pong));
    const with999 = raw.messages.filter((m) => m.id === 999);
    assert.equal(with999.length, 1, `messages with id 999: ${JSON.stringify(with999)}`);
    assert.deepEqual(raw.badLines, []);
    assert.ok(!raw.messages.some((m) => m.result && m.result.hacked), 'the fake response leaked onto the protocol stream');
  });

  test('a thread writing to the captured stream after its call returned does not break the session', { timeout: 30_000 }, async () => {
    const s = await createSession(srv, 'late-writer');
    await evalOk(
      srv,
      '(let ((out *standard-output*) (err *error-output*)) (sb-thread:make-thread (lambda () (sleep 0.3) (ignore-errors (format out "late-out~%") (finish-output out)) (ignore-errors (format err "late-err~%")))) :spawned)',
      { session: s },
    );
    await sleep(600);
    const r = await evalOk(srv, '(progn (princ "mine") (+ 1 2))', { session: s });
    assert.deepEqual(r.structuredContent.values, ['3']);
    assert.ok(r.structuredContent.stdout.endsWith('mine'), JSON.stringify(r.structuredContent.stdout));
    assert.equal(await evalValue(srv, '(* 3 3)', { session: s }), '9');
  });

  test('replacing *standard-output* inside a call does not lose later output', async () => {
    const s = await createSession(srv, 'rebinder');
    await evalOk(srv, '(progn (setf *standard-output* (make-broadcast-stream)) 1)', { session: s });
    const r = await evalOk(srv, '(progn (princ "visible") 2)', { session: s });
    assert.equal(r.structuredContent.stdout, 'visible');
  });
});

// ---------------------------------------------------------------------------
describe('redefinitions and global settings', () => {
  test('(defun cl-user::evaluate-lisp ...) changes nothing for the server', async () => {
    const s = await createSession(srv, 'redef');
    await evalOk(srv, '(defun cl-user::evaluate-lisp (&rest a) (declare (ignore a)) :hacked)', { session: s });
    await evalOk(srv, '(defun cl-user::eval-string (&rest a) (declare (ignore a)) :hacked)', { session: s });
    assert.equal(await evalValue(srv, '(+ 1 2)', { session: s }), '3');
    assert.equal(await evalValue(srv, '(evaluate-lisp)', { session: s }), ':HACKED');
  });

  test('redefining agent internals in LISPMCP-AGENT fails with an error; the session keeps working', async () => {
    const s = await createSession(srv, 'agent-hacker');
    await evalOk(srv, '(defvar *still-here* :yes)', { session: s });
    assert.equal(await evalValue(srv, '(not (null (find-package "LISPMCP-AGENT")))', { session: s }), 'T');
    // a function of the agent, by name
    const name = await evalValue(
      srv,
      `(let ((p (find-package "LISPMCP-AGENT")))
         (loop for sym being the present-symbols of p
               when (and (eq (symbol-package sym) p) (fboundp sym) (not (macro-function sym)) (not (special-operator-p sym)))
               return (symbol-name sym)))`,
      { session: s },
    );
    assert.match(name, /^"[^"]+"$/, `no function found in LISPMCP-AGENT: ${name}`);
    const sym = JSON.parse(name);
    const r = await evaluate(srv, `(defun lispmcp-agent::|${sym}| (&rest args) (declare (ignore args)) :hacked)`, { session: s });
    assertToolError(r, `defun lispmcp-agent::${sym}`);
    // (setf fdefinition) on every agent function: each attempt must fail
    const count = await evalValue(
      srv,
      `(let ((p (find-package "LISPMCP-AGENT")) (ok 0) (failed 0))
         (do-symbols (sym p)
           (when (and (eq (symbol-package sym) p) (fboundp sym) (not (macro-function sym)) (not (special-operator-p sym)))
             (handler-case (progn (setf (fdefinition sym) (fdefinition sym)) (incf ok))
               (error () (incf failed)))))
         (list ok failed))`,
      { session: s },
    );
    const [ok, failed] = count.slice(1, -1).split(' ').map(Number);
    assert.equal(ok, 0, `redefined ${ok} agent functions: ${count}`);
    assert.ok(failed > 0, count);
    // interning into the agent package is refused too
    assertToolError(await evaluate(srv, '(defun lispmcp-agent::brand-new-hack () 1)', { session: s }));
    const after = await evaluate(srv, '(list (+ 1 2) *still-here*)', { session: s });
    assertOk(after);
    assert.equal(value(after), '(3 :YES)');
  });

  test('(setf *print-base* 16): 10 prints as "A" and evaluation keeps working', async () => {
    const s = await createSession(srv, 'hex');
    await evalOk(srv, '(setf *print-base* 16)', { session: s });
    assert.equal(await evalValue(srv, '10', { session: s }), 'A');
    assert.equal(await evalValue(srv, '(+ 250 5)', { session: s }), 'FF');
    const e = assertToolError(await evaluate(srv, '(/ 1 0)', { session: s }));
    assert.equal(e.type, 'DIVISION-BY-ZERO');
    await evalOk(srv, '(setf *print-base* 10)', { session: s });
    assert.equal(await evalValue(srv, '(+ 250 5)', { session: s }), '255');
  });

  test('hostile printer and reader settings do not break the protocol', async () => {
    const s = await createSession(srv, 'printer');
    await evalOk(srv, '(setf *print-pretty* t *print-right-margin* 5 *print-escape* nil *print-case* :downcase *read-default-float-format* (quote double-float))', { session: s });
    const r = await evalOk(srv, '(list 1 2 3)', { session: s });
    assert.equal(r.structuredContent.values.length, 1);
    const r2 = await evalOk(srv, '(setf *readtable* (copy-readtable nil)) (set-macro-character #\\! (lambda (s c) (declare (ignore s c)) 42)) 1', { session: s });
    assert.equal(r2.structuredContent.values.length, 1);
    assert.equal(await evalValue(srv, '(+ 1 1)', { session: s }), '2');
    await evalOk(srv, '(setf *package* (make-package "EMPTY-ONE" :use nil))', { session: s });
    const r3 = await evaluate(srv, '(cl:+ 1 1)', { session: s });
    assertOk(r3);
    assert.equal(r3.structuredContent.package, 'EMPTY-ONE');
  });
});

// ---------------------------------------------------------------------------
describe('timeouts and cancellation', () => {
  test('(loop) with timeout-seconds 1 returns TIMEOUT within 3 s; definitions survive', { timeout: 30_000 }, async () => {
    const s = await createSession(srv, 'timeout');
    await evalOk(srv, '(defun survivor (x) (* x 3))', { session: s });
    const t0 = Date.now();
    const r = await evaluate(srv, '(loop)', { session: s, timeoutSeconds: 1 });
    const dt = Date.now() - t0;
    const e = assertToolError(r, '(loop)');
    assert.equal(e.type, 'TIMEOUT');
    assert.equal(e['session-state'], 'kept');
    assert.ok(dt < 3000, `took ${dt} ms`);
    assert.ok(dt >= 900, `returned after ${dt} ms, before the timeout`);
    assert.equal(await evalValue(srv, '(survivor 14)', { session: s }), '42');
  });

  test('a timeout keeps the output captured so far', { timeout: 30_000 }, async () => {
    const s = await createSession(srv, 'timeout-output');
    const r = await evaluate(srv, '(progn (princ "partial") (finish-output) (sleep 30))', { session: s, timeoutSeconds: 1 });
    const e = assertToolError(r);
    assert.equal(e.type, 'TIMEOUT');
    assert.equal(r.structuredContent.stdout, 'partial');
  });

  test('--eval-timeout 1 applies when no timeout-seconds is given; timeout-seconds overrides it', { timeout: 60_000 }, async () => {
    const quick = await startServer({ args: ['--eval-timeout', '1'] });
    extra.push(quick);
    await evalOk(quick, '(defvar *q* 5)');
    const t0 = Date.now();
    const e = assertToolError(await evaluate(quick, '(loop)'));
    assert.equal(e.type, 'TIMEOUT');
    assert.ok(Date.now() - t0 < 3000);
    assert.equal(await evalValue(quick, '*q*'), '5');
    // a longer per-call timeout lets a 1.5 s evaluation finish
    assert.equal(await evalValue(quick, '(progn (sleep 1.5) :finished)', { timeoutSeconds: 5 }), ':FINISHED');
  });

  test('code that swallows the interrupt still ends within a bounded time; the session works after', { timeout: 60_000 }, async () => {
    const s = await createSession(srv, 'stubborn');
    const t0 = Date.now();
    const r = await evaluate(srv, '(loop (handler-case (loop) (condition () nil)))', { session: s, timeoutSeconds: 1 });
    const dt = Date.now() - t0;
    const e = assertToolError(r);
    assert.equal(e.type, 'TIMEOUT');
    assert.ok(dt < 20_000, `took ${dt} ms`);
    const r2 = await evaluate(srv, '(+ 1 2)', { session: s });
    assertOk(r2, 'after the stubborn loop');
    assert.equal(value(r2), '3');
  });

  test('code with interrupts disabled still ends within a bounded time; the session works after', { timeout: 60_000 }, async () => {
    const s = await createSession(srv, 'no-interrupts');
    const t0 = Date.now();
    const r = await evaluate(srv, '(sb-sys:without-interrupts (loop))', { session: s, timeoutSeconds: 1 });
    const dt = Date.now() - t0;
    const e = assertToolError(r);
    assert.equal(e.type, 'TIMEOUT');
    assert.ok(dt < 20_000, `took ${dt} ms`);
    const r2 = await evaluate(srv, '(+ 1 2)', { session: s });
    assertOk(r2, 'after without-interrupts');
    assert.equal(value(r2), '3');
  });

  test('cancelling (sleep 60) via AbortSignal: the call is rejected, the session keeps its definitions', { timeout: 60_000 }, async () => {
    const s = await createSession(srv, 'cancel');
    await evalOk(srv, '(defvar *before-cancel* :kept) (defun after-cancel () :works)', { session: s });
    const ac = new AbortController();
    const p = evaluate(srv, '(sleep 60)', { session: s, signal: ac.signal });
    setTimeout(() => ac.abort('test cancels'), 300);
    await assert.rejects(p);
    const t0 = Date.now();
    const r = await evaluate(srv, '(list *before-cancel* (after-cancel))', { session: s });
    const dt = Date.now() - t0;
    assertOk(r, 'after cancellation');
    assert.equal(value(r), '(:KEPT :WORKS)');
    assert.ok(dt < 5000, `the next call waited ${dt} ms: the cancelled evaluation was not interrupted`);
    assert.equal(r.structuredContent.notice, undefined, 'a cancellation must not lose the image');
  });

  test('cancelling (loop) via AbortSignal: the session keeps working', { timeout: 60_000 }, async () => {
    const s = await createSession(srv, 'cancel-loop');
    await evalOk(srv, '(defvar *cl* 11)', { session: s });
    const ac = new AbortController();
    const p = evaluate(srv, '(loop)', { session: s, signal: ac.signal });
    setTimeout(() => ac.abort(), 300);
    await assert.rejects(p);
    const t0 = Date.now();
    assert.equal(await evalValue(srv, '*cl*', { session: s }), '11');
    assert.ok(Date.now() - t0 < 5000);
  });

  test('cancellation over the raw protocol: no response for the cancelled request, later ones answered', { timeout: 60_000 }, async () => {
    const raw = new RawServer();
    extra.push(raw);
    await raw.initialize();
    await raw.callTool('evaluate-lisp', { code: '(defvar *raw-kept* 5)' });
    const id = raw.newId();
    await raw.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(sleep 60)' } } });
    await sleep(300);
    await raw.notify('notifications/cancelled', { requestId: id, reason: 'test' });
    const r = await raw.callTool('evaluate-lisp', { code: '*raw-kept*' }, { timeout: 10_000 });
    assert.deepEqual(r.result.structuredContent.values, ['5']);
    await sleep(300);
    // MCP: the receiver SHOULD NOT send a response for a cancelled request; if it does, it must
    // be the CANCELLED error, not a normal result.
    const late = raw.messages.find((m) => m.id === id);
    if (late) {
      assert.ok(late.error || late.result?.isError, JSON.stringify(late));
      if (late.result) assert.equal(late.result.structuredContent.error.type, 'CANCELLED');
    }
  });
});

// ---------------------------------------------------------------------------
describe('garbage on the protocol stream (raw)', () => {
  let raw;
  before(async () => {
    raw = new RawServer();
    extra.push(raw);
    await raw.initialize();
    raw.markSync();
  });

  const junkLines = () => {
    // random bytes without newlines, starting with a byte that cannot begin JSON
    const rnd = rng.bytes(rng.int(10, 2000));
    for (let i = 0; i < rnd.length; i++) if (rnd[i] === 0x0a || rnd[i] === 0x0d) rnd[i] = 0x20;
    rnd[0] = 0x01;
    return [
      ['random bytes', rnd],
      ['not json', 'this is not json at all'],
      ['truncated json', '{"jsonrpc":"2.0","id":1,"method":"ping"'],
      ['invalid utf-8', Buffer.from([0x7b, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x7d])],
      ['invalid utf-8 inside a string', Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"u8","method":"ping","params":{"x":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}}')])],
      ['lone NUL', Buffer.from([0x00])],
      ['a number', '42'],
      ['a string', '"hello"'],
      ['null', 'null'],
      ['an empty array', '[]'],
      ['an array of numbers', '[1,2,3]'],
      ['huge 5 MB line of junk', Buffer.alloc(5 * 1024 * 1024, 0x61)],
      ['huge 5 MB string in valid JSON without method', JSON.stringify({ jsonrpc: '2.0', id: 'big', junk: 'x'.repeat(5 * 1024 * 1024) })],
    ];
  };

  test('every garbage line gets an error response (id null for unparsable ones) and the server keeps serving', { timeout: 120_000 }, async () => {
    for (const [label, line] of junkLines()) {
      await raw.sendRaw(line);
      const { between } = await raw.sync({ timeout: 30_000 });
      assert.equal(between.length, 1, `${label}: expected exactly one error response, got ${JSON.stringify(between).slice(0, 500)}`);
      const m = between[0];
      assert.ok(m.error && typeof m.error.code === 'number', `${label}: ${JSON.stringify(m).slice(0, 500)}`);
      assert.ok([-32700, -32600].includes(m.error.code), `${label}: code ${m.error.code}`);
      assert.equal(typeof m.error.message, 'string');
      if (label === 'huge 5 MB string in valid JSON without method') assert.ok(m.id === 'big' || m.id === null, JSON.stringify(m).slice(0, 300));
      else if (label !== 'invalid utf-8 inside a string') assert.equal(m.id, null, `${label}: ${JSON.stringify(m).slice(0, 300)}`);
      if (['random bytes', 'not json', 'truncated json', 'invalid utf-8'].includes(label)) assert.equal(m.error.code, -32700, label);
    }
    const r = await raw.callTool('evaluate-lisp', { code: '(+ 40 2)' });
    assert.deepEqual(r.result.structuredContent.values, ['42']);
    assert.deepEqual(raw.badLines, []);
  });

  test('blank and whitespace-only lines get no response', async () => {
    raw.markSync();
    await raw.sendRaw('\n');
    await raw.sendRaw('   \t  \n');
    await raw.sendRaw('\r\n');
    const { between } = await raw.sync();
    assert.deepEqual(between, []);
  });

  test('a flood of mixed garbage and valid requests: each valid request answered correctly', { timeout: 60_000 }, async () => {
    const ids = [];
    let chunk = '';
    for (let i = 0; i < 200; i++) {
      if (i % 3 === 0) {
        const id = `flood-${i}`;
        ids.push(id);
        chunk += JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }) + '\n';
      } else if (i % 3 === 1) {
        chunk += `garbage ${rng.word(20)} {{{\n`;
      } else {
        chunk += '\n';
      }
    }
    // one write: many lines in one read() on the server side
    raw.markSync();
    await raw.sendRaw(chunk);
    for (const id of ids) {
      const resp = await raw.response(id);
      assert.deepEqual(resp.result, {}, JSON.stringify(resp));
    }
    const ev = await raw.callTool('evaluate-lisp', { code: '"after the flood"' });
    assert.deepEqual(ev.result.structuredContent.values, ['"after the flood"']);
    assert.deepEqual(raw.badLines, []);
  });

  test('a request split across many small writes is reassembled', async () => {
    const msg = JSON.stringify({ jsonrpc: '2.0', id: 'split', method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(* 6 7)' } } }) + '\n';
    const bytes = Buffer.from(msg);
    for (let i = 0; i < bytes.length; i += 7) {
      await raw.writeBytes(bytes.subarray(i, i + 7));
      if (i % 35 === 0) await sleep(5);
    }
    const resp = await raw.response('split');
    assert.deepEqual(resp.result.structuredContent.values, ['42']);
  });

  test('a message split inside a multi-byte UTF-8 character is decoded correctly', async () => {
    const msg = JSON.stringify({ jsonrpc: '2.0', id: 'utf8-split', method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(length "λλλ日本")' } } }) + '\n';
    const bytes = Buffer.from(msg);
    const lambda = bytes.indexOf(Buffer.from('λ'));
    await raw.writeBytes(bytes.subarray(0, lambda + 1)); // first byte of λ only
    await sleep(50);
    await raw.writeBytes(bytes.subarray(lambda + 1));
    const resp = await raw.response('utf8-split');
    assert.deepEqual(resp.result.structuredContent.values, ['5']);
  });
});
