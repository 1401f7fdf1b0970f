// Every tool of INTERFACE.md through the MCP SDK: session management, value formatting, output
// capture, warnings, errors, reader errors, the package argument, printing, text content, schemas.

import { test as nodeTest, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer,
  callTool,
  evaluate,
  evalOk,
  evalValue,
  evalError,
  timeExecution,
  createSession,
  listSessions,
  closeSession,
  assertOk,
  assertToolError,
  expectUnknownSession,
  expectParamError,
  value,
  text,
  withStderr,
  TOOL_NAMES,
  McpError,
  assertNotSchemaViolation,
} from './helpers.mjs';

let srv;
let capped;
const extra = [];
const test = withStderr(nodeTest, () => [srv, capped, ...extra]);

before(async () => {
  srv = await startServer({ args: ['--eval-timeout', '10'] });
});
after(async () => {
  await srv?.close();
  await capped?.close();
  for (const x of extra) await x.close();
});

// ---------------------------------------------------------------------------
describe('tools/list', () => {
  test('lists the six tools, each with an inputSchema and an outputSchema', async () => {
    const { tools } = await srv.client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
    for (const t of tools) {
      assert.equal(typeof t.description, 'string', `${t.name} description`);
      assert.ok(t.description.length > 0, `${t.name} description`);
      assert.equal(t.inputSchema?.type, 'object', `${t.name} inputSchema: ${JSON.stringify(t.inputSchema)}`);
      assert.equal(t.outputSchema?.type, 'object', `${t.name} outputSchema: ${JSON.stringify(t.outputSchema)}`);
    }
  });

  test('input schemas declare the arguments of INTERFACE.md', async () => {
    const { tools } = await srv.client.listTools();
    const by = Object.fromEntries(tools.map((t) => [t.name, t]));
    const props = (n) => Object.keys(by[n].inputSchema.properties || {});
    const req = (n) => by[n].inputSchema.required || [];
    for (const p of ['code', 'session', 'package', 'timeout-seconds', 'capture-time']) assert.ok(props('evaluate-lisp').includes(p), `evaluate-lisp lacks ${p}`);
    assert.deepEqual(req('evaluate-lisp'), ['code']);
    assert.equal(by['evaluate-lisp'].inputSchema.properties.code.type, 'string');
    assert.equal(by['evaluate-lisp'].inputSchema.properties['timeout-seconds'].type, 'number');
    assert.equal(by['evaluate-lisp'].inputSchema.properties['capture-time'].type, 'boolean');
    for (const p of ['code', 'session', 'package']) assert.ok(props('time-execution').includes(p), `time-execution lacks ${p}`);
    assert.deepEqual(req('time-execution'), ['code']);
    assert.ok(props('create-session').includes('name'));
    assert.ok(props('reset-session').includes('session'));
    assert.ok(props('close-session').includes('session'));
    assert.deepEqual(req('close-session'), ['session']);
    for (const n of ['evaluate-lisp', 'time-execution', 'list-sessions', 'create-session']) {
      assert.ok(!req(n).includes('session'), `${n}: session must be optional`);
    }
  });

  test('output schemas describe the structuredContent fields', async () => {
    const { tools } = await srv.client.listTools();
    const by = Object.fromEntries(tools.map((t) => [t.name, t]));
    const oprops = (n) => Object.keys(by[n].outputSchema.properties || {});
    for (const p of ['values', 'stdout', 'stderr', 'warnings', 'package', 'session', 'timing', 'error'])
      assert.ok(oprops('evaluate-lisp').includes(p), `evaluate-lisp outputSchema lacks ${p}`);
    for (const p of ['result', 'values', 'output', 'package', 'session', 'timing'])
      assert.ok(oprops('time-execution').includes(p), `time-execution outputSchema lacks ${p}`);
    assert.ok(oprops('create-session').includes('session'));
    assert.ok(oprops('list-sessions').includes('sessions'));
    assert.ok(oprops('reset-session').includes('session'));
    assert.ok(oprops('close-session').includes('closed'));
  });
});

// ---------------------------------------------------------------------------
describe('sessions', () => {
  test('the default session is "default" and is used when no session is given', async () => {
    const r = await evalOk(srv, '(defvar *in-default* :yes)');
    assert.equal(r.structuredContent.session, 'default');
    assert.equal(await evalValue(srv, '*in-default*', { session: 'default' }), ':YES');
  });

  test('create-session returns fresh distinct ids, never "default"', async () => {
    const ids = [await createSession(srv), await createSession(srv, 'named'), await createSession(srv, 'named')];
    assert.equal(new Set(ids).size, 3, JSON.stringify(ids));
    for (const id of ids) assert.notEqual(id, 'default');
    const r = await evalOk(srv, '(+ 1 1)', { session: ids[0] });
    assert.equal(r.structuredContent.session, ids[0]);
    for (const id of ids) assertOk(await closeSession(srv, id));
  });

  test('list-sessions shows session, name, package, evaluations, alive, idle-seconds', async () => {
    const s = await createSession(srv, 'listed-one');
    await evalOk(srv, '(defpackage :listed-pkg (:use :cl))', { session: s });
    await evalOk(srv, '(in-package :listed-pkg)', { session: s });
    await evalOk(srv, '(+ 1 2)', { session: s });
    await evalOk(srv, '(+ 1 2)'); // make sure default is started
    const sessions = await listSessions(srv);
    const me = sessions.find((x) => x.session === s);
    assert.ok(me, JSON.stringify(sessions));
    assert.equal(me.name, 'listed-one');
    assert.equal(me.package, 'LISTED-PKG');
    assert.equal(me.evaluations, 3);
    assert.equal(me.alive, true);
    assert.equal(typeof me['idle-seconds'], 'number');
    assert.ok(me['idle-seconds'] >= 0 && me['idle-seconds'] < 60, JSON.stringify(me));
    const def = sessions.find((x) => x.session === 'default');
    assert.ok(def, `default session missing: ${JSON.stringify(sessions)}`);
    assert.equal(def.alive, true);
    // idle-seconds grows while idle
    await new Promise((r) => setTimeout(r, 1200));
    const again = (await listSessions(srv)).find((x) => x.session === s);
    assert.ok(again['idle-seconds'] >= 1, JSON.stringify(again));
    assertOk(await closeSession(srv, s));
  });

  test('reset-session wipes definitions and returns package COMMON-LISP-USER', async () => {
    const s = await createSession(srv, 'to-reset');
    await evalOk(srv, '(defun will-vanish () 1)', { session: s });
    await evalOk(srv, '(defvar *will-vanish* 1)', { session: s });
    await evalOk(srv, '(defpackage :reset-pkg (:use :cl))', { session: s });
    await evalOk(srv, '(in-package :reset-pkg)', { session: s });
    const r = await callTool(srv, 'reset-session', { session: s });
    assertOk(r, 'reset-session');
    assert.deepEqual(r.structuredContent, { session: s, package: 'COMMON-LISP-USER' });
    const after = await evalOk(srv, "(list (fboundp 'will-vanish) (boundp '*will-vanish*) (find-package :reset-pkg))", { session: s });
    assert.equal(value(after), '(NIL NIL NIL)');
    assert.equal(after.structuredContent.package, 'COMMON-LISP-USER');
    assertOk(await closeSession(srv, s));
  });

  test('reset-session without a session resets the default session', async () => {
    await evalOk(srv, '(defun default-thing () 1)');
    const r = await callTool(srv, 'reset-session', {});
    assertOk(r, 'reset-session');
    assert.equal(r.structuredContent.session, 'default');
    assert.equal(r.structuredContent.package, 'COMMON-LISP-USER');
    assert.equal(await evalValue(srv, "(fboundp 'default-thing)"), 'NIL');
  });

  test('reset-session leaves other sessions alone', async () => {
    const a = await createSession(srv);
    const b = await createSession(srv);
    await evalOk(srv, '(defvar *keep-me* 17)', { session: b });
    await evalOk(srv, '(defvar *lose-me* 18)', { session: a });
    assertOk(await callTool(srv, 'reset-session', { session: a }));
    assert.equal(await evalValue(srv, '*keep-me*', { session: b }), '17');
    assert.equal(await evalValue(srv, "(boundp '*lose-me*)", { session: a }), 'NIL');
  });

  test('close-session closes; afterwards the id is unknown everywhere', async () => {
    const s = await createSession(srv, 'to-close');
    await evalOk(srv, '(+ 1 1)', { session: s });
    const r = await closeSession(srv, s);
    assertOk(r, 'close-session');
    assert.deepEqual(r.structuredContent, { session: s, closed: true });
    const sessions = await listSessions(srv);
    assert.ok(!sessions.some((x) => x.session === s), `closed session still listed: ${JSON.stringify(sessions)}`);
    await expectUnknownSession(evaluate(srv, '(+ 1 1)', { session: s }), s);
    await expectUnknownSession(timeExecution(srv, '(+ 1 1)', { session: s }), s);
    await expectUnknownSession(callTool(srv, 'reset-session', { session: s }), s);
    await expectUnknownSession(closeSession(srv, s), s);
  });

  test('an unknown session id is an error naming it', async () => {
    const bogus = 'no-such-session-4711';
    await expectUnknownSession(evaluate(srv, '(+ 1 1)', { session: bogus }), bogus);
    await expectUnknownSession(timeExecution(srv, '(+ 1 1)', { session: bogus }), bogus);
    await expectUnknownSession(callTool(srv, 'reset-session', { session: bogus }), bogus);
    await expectUnknownSession(closeSession(srv, bogus), bogus);
    // and it was not created as a side effect
    const sessions = await listSessions(srv);
    assert.ok(!sessions.some((x) => x.session === bogus));
  });

  test('close-session without a session is a parameter error naming "session"', async () => {
    await expectParamError(callTool(srv, 'close-session', {}), 'session');
  });

  test('evaluate-lisp without code / with non-string code is a parameter error naming "code"', async () => {
    await expectParamError(callTool(srv, 'evaluate-lisp', {}), 'code');
    await expectParamError(callTool(srv, 'evaluate-lisp', { code: 42 }), 'code');
    await expectParamError(callTool(srv, 'time-execution', {}), 'code');
  });

  test('an unknown tool is an error naming it', async () => {
    await expectParamError(callTool(srv, 'no-such-tool-xyz', {}), 'no-such-tool-xyz');
  });

  test('ill-typed optional arguments are rejected, naming them', async () => {
    await expectParamError(callTool(srv, 'evaluate-lisp', { code: '1', 'timeout-seconds': 'soon' }), 'timeout-seconds');
    await expectParamError(callTool(srv, 'evaluate-lisp', { code: '1', session: 12 }), 'session');
  });
});

// ---------------------------------------------------------------------------
describe('evaluate-lisp results', () => {
  let s;
  before(async () => {
    s = await createSession(srv, 'results');
  });

  test('values formatting with prin1', async () => {
    const cases = [
      ['(values 1 2)', ['1', '2']],
      ['(values)', []],
      ['"hi"', ['"hi"']],
      ['(defun square (x) (* x x))', ['SQUARE']],
      ["'sym", ['SYM']],
      [':kw', [':KW']],
      ['#\\a', ['#\\a']],
      ["'(1 \"two\" #\\3 4.5 :five)", ['(1 "two" #\\3 4.5 :FIVE)']],
      ['(/ 1 3)', ['1/3']],
      ['(expt 2 100)', ['1267650600228229401496703205376']],
      ['nil', ['NIL']],
      ['(floor 7 2)', ['3', '1']],
      ['"a\\"b\\\\c"', ['"a\\"b\\\\c"']],
    ];
    for (const [code, values] of cases) {
      const r = await evalOk(srv, code, { session: s });
      assert.deepEqual(r.structuredContent.values, values, code);
    }
  });

  test('several forms are evaluated in order; values are those of the last form', async () => {
    const r = await evalOk(srv, '(defvar *m* 1) (incf *m*) (* *m* 10)', { session: s });
    assert.deepEqual(r.structuredContent.values, ['20']);
    assert.equal(await evalValue(srv, '*m*', { session: s }), '2');
  });

  test('unicode survives the round trip (code, values, output)', async () => {
    const r = await evalOk(srv, '(progn (princ "→ λ 日本") (list (length "λ日本") "héllo λ 日本"))', { session: s });
    assert.deepEqual(r.structuredContent.values, ['(3 "héllo λ 日本")']);
    assert.equal(r.structuredContent.stdout, '→ λ 日本');
    assert.equal(await evalValue(srv, '(char-code #\\λ)', { session: s }), '955');
  });

  test('code may contain NUL and other control characters', async () => {
    assert.equal(await evalValue(srv, '(length "a\u0000b\u0001c")', { session: s }), '5');
    assert.equal(await evalValue(srv, '(char-code (char "a\u0000b" 1))', { session: s }), '0');
    const r = await evalOk(srv, '(coerce (list #\\a (code-char 0) #\\b) (quote string))', { session: s });
    assert.equal(value(r), '"a\u0000b"');
  });

  test('a 1 MB code string is evaluated', async () => {
    const big = 'x'.repeat(1_000_000);
    assert.equal(await evalValue(srv, `(length "${big}")`, { session: s }), '1000000');
  });

  test('stdout and stderr are captured separately', async () => {
    const r = await evalOk(srv, '(progn (princ "out") (princ "err" *error-output*) 1)', { session: s });
    const sc = r.structuredContent;
    assert.equal(sc.stdout, 'out');
    assert.equal(sc.stderr, 'err');
    assert.deepEqual(sc.values, ['1']);
    const t = text(r);
    assert.match(t, /\[stdout\][\s\S]*out/);
    assert.match(t, /\[stderr\][\s\S]*err/);
    assert.match(t, /^=> 1$/m);
    // format t, write-line, terpri go to stdout too
    const r2 = await evalOk(srv, '(progn (format t "a~%") (write-line "b") (format *standard-output* "c") :done)', { session: s });
    assert.equal(r2.structuredContent.stdout, 'a\nb\nc');
    assert.equal(r2.structuredContent.stderr, '');
  });

  test('output is per call: the next call starts with empty stdout', async () => {
    await evalOk(srv, '(princ "once")', { session: s });
    const r = await evalOk(srv, '(+ 1 1)', { session: s });
    assert.equal(r.structuredContent.stdout, '');
    assert.equal(r.structuredContent.stderr, '');
  });

  test('warnings are recorded: undefined function gives a STYLE-WARNING naming it', async () => {
    const r = await evalOk(srv, '(defun uses-undefined () (no-such-function-xyz))', { session: s });
    assert.deepEqual(r.structuredContent.values, ['USES-UNDEFINED']);
    const ws = r.structuredContent.warnings;
    assert.ok(Array.isArray(ws) && ws.length > 0, JSON.stringify(r.structuredContent));
    // the condition's class: STYLE-WARNING or a subclass such as SB-INT:SIMPLE-STYLE-WARNING
    const w = ws.find((x) => /(^|[:-])STYLE-WARNING$/.test(x.type) && /NO-SUCH-FUNCTION-XYZ/i.test(x.message));
    assert.ok(w, `no STYLE-WARNING naming NO-SUCH-FUNCTION-XYZ: ${JSON.stringify(ws)}`);
    assert.match(text(r), /\[warnings\]/);
    // a call without warnings has an empty list (or none)
    const r2 = await evalOk(srv, '(+ 1 2)', { session: s });
    assert.ok(r2.structuredContent.warnings === undefined || r2.structuredContent.warnings.length === 0);
  });

  test('explicit warn is recorded as WARNING, evaluation continues', async () => {
    const r = await evalOk(srv, '(progn (warn "careful-~a" 7) :after)', { session: s });
    assert.deepEqual(r.structuredContent.values, [':AFTER']);
    const w = r.structuredContent.warnings.find((x) => x.type === 'SIMPLE-WARNING' || x.type === 'WARNING');
    assert.ok(w, JSON.stringify(r.structuredContent.warnings));
    assert.ok(w.message.includes('careful-7'), JSON.stringify(w));
  });

  test('runtime error: (/ 1 0) is DIVISION-BY-ZERO with a backtrace mentioning /', async () => {
    const r = await evaluate(srv, '(/ 1 0)', { session: s });
    const e = assertToolError(r, '(/ 1 0)');
    assert.equal(e.type, 'DIVISION-BY-ZERO');
    assert.equal(typeof e.message, 'string');
    assert.ok(e.message.length > 0);
    assert.ok(Array.isArray(e.backtrace) && e.backtrace.length > 0, JSON.stringify(e));
    for (const f of e.backtrace) assert.equal(typeof f, 'string');
    assert.ok(e.backtrace.some((f) => f.includes('/')), JSON.stringify(e.backtrace));
    assert.equal(e['session-state'], 'kept');
    assert.equal(e.phase, 'eval');
    assert.deepEqual(r.structuredContent.values ?? [], []);
    const t = text(r);
    assert.match(t, /\[ERROR\] DIVISION-BY-ZERO/);
    assert.match(t, /\[Backtrace\]/);
  });

  test('backtrace shows the user\'s frames and not the agent\'s', async () => {
    await evalOk(srv, '(defun inner-fails (x) (car x)) (defun outer-calls (y) (list (inner-fails y)))', { session: s });
    const e = await evalError(srv, '(outer-calls 5)', { session: s });
    assert.equal(e.type, 'TYPE-ERROR');
    const bt = e.backtrace.join('\n');
    assert.match(bt, /INNER-FAILS/);
    assert.match(bt, /OUTER-CALLS/);
    assert.ok(e.backtrace.length <= 20, `${e.backtrace.length} frames`);
    assert.doesNotMatch(bt, /LISPMCP-AGENT/, 'agent frames should be left out');
  });

  test('error output captured before the error is returned', async () => {
    const r = await evaluate(srv, '(progn (princ "before-error") (error "my-error ~a" 42))', { session: s });
    const e = assertToolError(r);
    assert.equal(e.type, 'SIMPLE-ERROR');
    assert.ok(e.message.includes('my-error 42'), e.message);
    assert.equal(r.structuredContent.stdout, 'before-error');
  });

  test('user-defined condition types are reported by class name', async () => {
    await evalOk(srv, '(define-condition my-odd-condition (error) () (:report "odd things happened"))', { session: s });
    const e = await evalError(srv, "(error 'my-odd-condition)", { session: s });
    assert.equal(e.type, 'MY-ODD-CONDITION');
    assert.equal(e.message, 'odd things happened');
  });

  test('reader error: "(+ 1 2" is phase read with position, line and column', async () => {
    const e = await evalError(srv, '(+ 1 2', { session: s });
    assert.equal(e.phase, 'read');
    for (const k of ['position', 'line', 'column']) assert.equal(typeof e[k], 'number', `${k}: ${JSON.stringify(e)}`);
    assert.equal(e['session-state'], 'kept');
  });

  test('reader error on line 3 reports line 3', async () => {
    const e = await evalError(srv, '1\n2\n  )', { session: s });
    assert.equal(e.phase, 'read');
    assert.equal(e.line, 3, JSON.stringify(e));
  });

  test('unknown package prefix is a read error naming the package', async () => {
    const e = await evalError(srv, '(nosuchpkg-xyz::foo 1)', { session: s });
    assert.equal(e.phase, 'read');
    assert.match(e.message, /NOSUCHPKG-XYZ/i);
  });

  test('(read-line) gets END-OF-FILE promptly', async () => {
    const t0 = Date.now();
    const e = await evalError(srv, '(read-line)', { session: s, timeoutSeconds: 10 });
    assert.equal(e.type, 'END-OF-FILE', JSON.stringify(e));
    assert.equal(e['session-state'], 'kept');
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
    assert.equal(await evalValue(srv, '(values (read-line *standard-input* nil :eof))', { session: s }), ':EOF');
  });

  test('the package argument binds *package* for one call only', async () => {
    await evalOk(srv, '(defpackage :p2 (:use :cl))', { session: s });
    const r = await evalOk(srv, '(package-name *package*)', { session: s, package: 'P2' });
    assert.equal(value(r), '"P2"');
    const r2 = await evalOk(srv, '(package-name *package*)', { session: s });
    assert.equal(value(r2), '"COMMON-LISP-USER"');
    assert.equal(r2.structuredContent.package, 'COMMON-LISP-USER');
    // symbols are read in that package
    await evalOk(srv, '(defun p2-fn () :in-p2)', { session: s, package: 'P2' });
    assert.equal(await evalValue(srv, '(p2::p2-fn)', { session: s }), ':IN-P2');
    assert.equal(await evalValue(srv, "(fboundp 'p2-fn)", { session: s }), 'NIL');
  });

  test('an unknown package argument is an error naming it', async () => {
    await expectParamError(evaluate(srv, '(+ 1 1)', { session: s, package: 'NO-SUCH-PACKAGE-Q' }), 'NO-SUCH-PACKAGE-Q');
    assert.equal(await evalValue(srv, '(+ 1 1)', { session: s }), '2');
  });

  test('time-execution honours the package argument', async () => {
    const r = await timeExecution(srv, '(package-name *package*)', { session: s, package: 'P2' });
    assertOk(r);
    assert.equal(r.structuredContent.result, '"P2"');
  });

  test('a circular list prints without hanging (*print-circle*)', async () => {
    const t0 = Date.now();
    const r = await evalOk(srv, '(let ((l (list 1 2 3))) (setf (cdr (last l)) l) l)', { session: s });
    const v = value(r);
    assert.match(v, /^#1=\(1 2 3 \. #1#\)$/);
    assert.ok(Date.now() - t0 < 5000);
  });

  test('a huge value is bounded and the call still succeeds', async () => {
    const r = await evalOk(srv, '(make-list 100000 :initial-element 12345)', { session: s });
    const v = value(r);
    assert.equal(typeof v, 'string');
    assert.ok(v.startsWith('(12345 12345'), v.slice(0, 50));
    // a deeply nested structure as well
    const r2 = await evalOk(srv, '(let ((x nil)) (dotimes (i 100000 x) (setf x (list x))))', { session: s });
    assert.equal(typeof value(r2), 'string');
  });

  test('content[0].text has "=> " lines for people', async () => {
    const r = await evalOk(srv, '(values 1 "two" :three)', { session: s });
    assert.equal(r.content[0].type, 'text');
    const t = r.content[0].text;
    assert.match(t, /^=> 1$/m);
    assert.match(t, /^=> "two"$/m);
    assert.match(t, /^=> :THREE$/m);
  });

  test('content[0].text keeps a NUL character of a value, a warning or an error whole', async () => {
    const r = await evalOk(srv, '(values (format nil "a~Cb" (code-char 0)) 2)', { session: s });
    assert.match(r.content[0].text, /^=> "a\u0000b"$/m);
    assert.match(r.content[0].text, /^=> 2$/m);
    const w = await evalOk(srv, '(progn (warn "w~Cx" (code-char 0)) 1)', { session: s });
    assert.match(w.content[0].text, /: w\u0000x$/m);
    const e = await evaluate(srv, '(error "e~Cf" (code-char 0))', { session: s });
    assert.equal(assertToolError(e).message, 'e\u0000f');
    assert.match(e.content[0].text, /^e\u0000f$/m);
  });

  test('time-execution: output field and error with timing', async () => {
    const r = await timeExecution(srv, '(progn (princ "abc") (values 7 8))', { session: s });
    assertOk(r);
    assert.equal(r.structuredContent.output, 'abc');
    assert.deepEqual(r.structuredContent.values, ['7', '8']);
    assert.equal(r.structuredContent.result, '7');
    const e = await timeExecution(srv, '(car 5)', { session: s });
    assert.equal(e.isError, true);
    assert.equal(e.structuredContent.error.type, 'TYPE-ERROR');
    assert.equal(typeof e.structuredContent.timing['real-time-ms'], 'number');
  });

  test('time-execution keeps definitions in the session (it is an evaluation)', async () => {
    assertOk(await timeExecution(srv, '(defun timed-def () :timed)', { session: s }));
    assert.equal(await evalValue(srv, '(timed-def)', { session: s }), ':TIMED');
  });

  test('sessions serialize concurrent calls', async () => {
    await evalOk(srv, '(defvar *conc* 0)', { session: s });
    const rs = await Promise.all([1, 2, 3].map(() => evaluate(srv, '(progn (sleep 0.2) (incf *conc*))', { session: s })));
    const vs = rs.map((r) => value(assertOk(r))).sort();
    assert.deepEqual(vs, ['1', '2', '3']);
  });

  test('sessions run independently: a long evaluation in one does not block another', async () => {
    const other = await createSession(srv);
    await evalOk(srv, '1', { session: other });
    const slow = evaluate(srv, '(progn (sleep 2) :slow)', { session: s });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    assert.equal(await evalValue(srv, ':fast', { session: other }), ':FAST');
    const dt = Date.now() - t0;
    assert.equal(value(assertOk(await slow)), ':SLOW');
    assert.ok(dt < 1500, `evaluation in another session waited ${dt} ms`);
  });
});

// ---------------------------------------------------------------------------
describe('output limits (--max-output-bytes)', () => {
  test('2 MB of output with the default limits: either complete, or truncated and said so', async () => {
    const r = await evalOk(srv, '(progn (dotimes (i 200000) (write-string "xxxxxxxxxx")) :done)');
    const sc = r.structuredContent;
    assert.deepEqual(sc.values, [':DONE']);
    const kept = sc.stdout.length;
    assert.ok(/^x*$/.test(sc.stdout));
    if (kept < 2_000_000) {
      assert.ok(sc.truncated && sc.truncated.stdout > 0, JSON.stringify({ kept, truncated: sc.truncated }));
      assert.equal(kept + sc.truncated.stdout, 2_000_000);
      assert.match(text(r), /truncat/i);
    }
  });

  test('--max-output-bytes 1000 caps stdout, reports dropped bytes, text says so', async () => {
    capped = await startServer({ args: ['--max-output-bytes', '1000'] });
    const r = await evalOk(capped, '(progn (dotimes (i 5000) (write-string "y")) (princ "e" *error-output*) 1)');
    const sc = r.structuredContent;
    assert.ok(sc.stdout.length <= 1000 && sc.stdout.length >= 900, `kept ${sc.stdout.length}`);
    assert.ok(sc.truncated, JSON.stringify(sc));
    assert.equal(sc.truncated.stdout, 5000 - sc.stdout.length);
    assert.equal(sc.stderr, 'e');
    assert.match(text(r), /truncat/i);
    // small output is not marked
    const r2 = await evalOk(capped, '(princ "small")');
    assert.equal(r2.structuredContent.stdout, 'small');
    assert.equal(r2.structuredContent.truncated, undefined);
  });
});

// ---------------------------------------------------------------------------
describe('values and session limits', () => {
  test('a 5 MB string value: either complete, or cut with truncated.values and said so', async () => {
    const r = await evalOk(srv, '(make-string 5000000 :initial-element #\\a)');
    const sc = r.structuredContent;
    const v = sc.values[0];
    assert.ok(v.startsWith('"aaaa'), v.slice(0, 20));
    if (v.length < 5_000_002) {
      assert.ok(sc.truncated && sc.truncated.values > 0, JSON.stringify(sc.truncated));
      assert.match(text(r), /truncat/i);
    }
  });

  test('--max-sessions 2: a third create-session fails with an error; closing one makes room', { timeout: 30_000 }, async () => {
    const lim = await startServer({ args: ['--max-sessions', '2'] });
    extra.push(lim);
    const a = await createSession(lim);
    await evalOk(lim, '1', { session: a });
    const b = await createSession(lim);
    await evalOk(lim, '2', { session: b });
    let failed = false;
    let third;
    try {
      third = await callTool(lim, 'create-session', {});
      failed = third.isError === true;
      if (!failed && third.structuredContent?.session) {
        // if the session is created lazily, using it must fail
        const u = await evaluate(lim, '3', { session: third.structuredContent.session });
        failed = u.isError === true;
      }
    } catch (e) {
      assert.ok(e instanceof McpError, String(e));
      assertNotSchemaViolation(e);
      failed = true;
    }
    assert.ok(failed, `a third session was allowed: ${JSON.stringify(third)}`);
    assert.equal(await evalValue(lim, '(+ 1 1)', { session: a }), '2', 'existing sessions still work');
    assertOk(await closeSession(lim, b));
    const c = await createSession(lim);
    assert.equal(await evalValue(lim, '(+ 2 2)', { session: c }), '4');
  });

  test('--idle-timeout 1: an idle session is closed, its id becomes unknown', { timeout: 30_000 }, async () => {
    const idle = await startServer({ args: ['--idle-timeout', '1'] });
    extra.push(idle);
    const s = await createSession(idle, 'sleepy');
    await evalOk(idle, '(defvar *zz* 1)', { session: s });
    await new Promise((r) => setTimeout(r, 3500));
    const sessions = await listSessions(idle);
    assert.ok(!sessions.some((x) => x.session === s && x.alive), `idle session still listed as alive: ${JSON.stringify(sessions)}`);
    const r = await evaluate(idle, "(boundp '*zz*)", { session: s }).catch((e) => e);
    // closed => unknown id; or (if the server only stops the image) a fresh image that says so
    if (r instanceof Error || r.isError) await expectUnknownSession(Promise.resolve(r instanceof Error ? Promise.reject(r) : r), s);
    else {
      assert.equal(value(r), 'NIL');
      assert.equal(typeof r.structuredContent.notice, 'string', 'a restarted idle session must say its state was lost');
    }
  });
});
