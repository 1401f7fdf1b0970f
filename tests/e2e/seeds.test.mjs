// Every "Verification Approach" example of the three seed specs
// (evaluation-isolation, state-persistence, timing-isolation), through the MCP SDK.

import { test as nodeTest, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer,
  evaluate,
  evalOk,
  evalValue,
  timeExecution,
  createSession,
  assertOk,
  value,
  text,
  stddev,
  withStderr,
  RawServer,
  TOOL_NAMES,
} from './helpers.mjs';

let srv;
let raw;
const test = withStderr(nodeTest, () => [srv, raw]);

before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv?.close();
  if (raw) await raw.close();
});

// ---------------------------------------------------------------------------
// evaluation-isolation
// ---------------------------------------------------------------------------
describe('seed: evaluation-isolation', () => {
  test('within-session persistence: (square 7) => "49"', async () => {
    const s = await createSession(srv, 'persist');
    const r1 = await evalOk(srv, '(defun square (x) (* x x))', { session: s });
    assert.deepEqual(r1.structuredContent.values, ['SQUARE']);
    const r2 = await evalOk(srv, '(square 7)', { session: s });
    assert.equal(value(r2), '49');
    assert.equal(r2.structuredContent.session, s);
  });

  test('formal expression: (f 5) => "10" in the session, (fboundp \'f) => NIL elsewhere', async () => {
    const a = await createSession(srv, 'formal-a');
    const b = await createSession(srv, 'formal-b');
    await evalOk(srv, '(defun f (x) (* x 2))', { session: a });
    assert.equal(await evalValue(srv, '(f 5)', { session: a }), '10');
    assert.equal(await evalValue(srv, "(fboundp 'f)", { session: b }), 'NIL');
    assert.equal(await evalValue(srv, "(fboundp 'f)"), 'NIL', 'default session must not see it either');
  });

  test('cross-session isolation: defvar *x* in A is unbound in B', async () => {
    const a = await createSession(srv, 'iso-a');
    const b = await createSession(srv, 'iso-b');
    await evalOk(srv, '(defvar *x* 42)', { session: a });
    assert.equal(await evalValue(srv, '*x*', { session: a }), '42');
    assert.equal(await evalValue(srv, "(boundp '*x*)", { session: b }), 'NIL');
    // and the reverse direction, with the same name holding a different value
    await evalOk(srv, '(defvar *x* 7)', { session: b });
    assert.equal(await evalValue(srv, '*x*', { session: b }), '7');
    assert.equal(await evalValue(srv, '*x*', { session: a }), '42');
  });

  test('server state protection: redefining server-looking functions changes nothing', async () => {
    const s = await createSession(srv, 'hacker');
    const hacks = [
      '(defun handle-initialize (&rest args) (declare (ignore args)) :hacked)',
      '(defun cl-user::handle-tools-call (&rest args) (declare (ignore args)) :hacked)',
      '(defun cl-user::evaluate-lisp (&rest args) (declare (ignore args)) :hacked)',
      '(defun cl-user::handle-request (&rest args) (declare (ignore args)) :hacked)',
      '(defvar *server-config* :hacked)',
    ];
    for (const h of hacks) await evalOk(srv, h, { session: s });
    assert.equal(await evalValue(srv, '(handle-initialize)', { session: s }), ':HACKED');

    // The SDK connection still works: tools/list, evaluation in this and other sessions.
    const tools = (await srv.client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(tools, [...TOOL_NAMES].sort());
    assert.equal(await evalValue(srv, '(+ 1 2)', { session: s }), '3');
    assert.equal(await evalValue(srv, '(+ 40 2)'), '42');
    const other = await createSession(srv);
    assert.equal(await evalValue(srv, "(fboundp 'handle-initialize)", { session: other }), 'NIL');

    // A fresh initialize (new connection, raw) after the same hack in its default session.
    raw = new RawServer();
    const init1 = await raw.initialize();
    assert.equal(init1.result.protocolVersion, '2025-11-25');
    const hack = await raw.callTool('evaluate-lisp', { code: hacks[0] });
    assert.ok(hack.result && !hack.result.isError, JSON.stringify(hack));
    const list = await raw.request('tools/list', {});
    assert.deepEqual(list.result.tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
    const init2 = await raw.request('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'again', version: '1' },
    });
    assert.ok(!JSON.stringify(init2).toUpperCase().includes('HACKED'), JSON.stringify(init2));
    if (init2.result) {
      assert.equal(init2.result.protocolVersion, '2025-11-25');
      assert.ok(init2.result.serverInfo, JSON.stringify(init2));
    } else {
      assert.equal(typeof init2.error.code, 'number');
    }
    const pong = await raw.request('ping');
    assert.deepEqual(pong.result, {});
    const ev = await raw.callTool('evaluate-lisp', { code: '(* 6 7)' });
    assert.deepEqual(ev.result.structuredContent.values, ['42']);
    assert.deepEqual(raw.badLines, [], 'stdout must carry only JSON-RPC lines');
  });
});

// ---------------------------------------------------------------------------
// state-persistence
// ---------------------------------------------------------------------------
describe('seed: state-persistence', () => {
  test('function persistence: SQUARE, 25, (1 4 9)', async () => {
    const s = await createSession(srv);
    const r1 = await evalOk(srv, '(defun square (x) (* x x))', { session: s });
    assert.equal(value(r1), 'SQUARE');
    assert.equal(await evalValue(srv, '(square 5)', { session: s }), '25');
    assert.equal(await evalValue(srv, "(mapcar #'square '(1 2 3))", { session: s }), '(1 4 9)');
  });

  test('variable persistence: *counter* 1, 1, 11', async () => {
    const s = await createSession(srv);
    await evalOk(srv, '(defvar *counter* 0)', { session: s });
    assert.equal(await evalValue(srv, '(incf *counter*)', { session: s }), '1');
    assert.equal(await evalValue(srv, '*counter*', { session: s }), '1');
    assert.equal(await evalValue(srv, '(incf *counter* 10)', { session: s }), '11');
    assert.equal(await evalValue(srv, '*counter*', { session: s }), '11');
  });

  test('macro persistence: (twice 21) => 42', async () => {
    const s = await createSession(srv);
    await evalOk(srv, '(defmacro twice (x) `(+ ,x ,x))', { session: s });
    assert.equal(await evalValue(srv, '(twice 21)', { session: s }), '42');
    assert.equal(await evalValue(srv, "(values (macroexpand-1 '(twice y)))", { session: s }), '(+ Y Y)');
  });

  test('class persistence: (slot-value *p* \'x) => 3', async () => {
    const s = await createSession(srv);
    await evalOk(srv, '(defclass point () ((x :initarg :x) (y :initarg :y)))', { session: s });
    await evalOk(srv, "(defvar *p* (make-instance 'point :x 3 :y 4))", { session: s });
    assert.equal(await evalValue(srv, "(slot-value *p* 'x)", { session: s }), '3');
    assert.equal(await evalValue(srv, "(slot-value *p* 'y)", { session: s }), '4');
  });

  test('package persistence: defpackage + in-package persists to later calls', async () => {
    const s = await createSession(srv);
    await evalOk(srv, '(defpackage :pkg-test (:use :cl))', { session: s });
    const r = await evalOk(srv, '(in-package :pkg-test)', { session: s });
    assert.equal(r.structuredContent.package, 'PKG-TEST');
    const r2 = await evalOk(srv, '(package-name *package*)', { session: s });
    assert.equal(value(r2), '"PKG-TEST"');
    assert.equal(r2.structuredContent.package, 'PKG-TEST');
    // symbols are now interned in PKG-TEST
    await evalOk(srv, '(defun here () :ok)', { session: s });
    assert.equal(await evalValue(srv, "(package-name (symbol-package 'here))", { session: s }), '"PKG-TEST"');
  });

  test('package persistence: (in-package :keyword) then cl:package-name => "KEYWORD"', async () => {
    const s = await createSession(srv);
    const r1 = await evalOk(srv, '(in-package :keyword)', { session: s });
    assert.equal(r1.structuredContent.package, 'KEYWORD');
    const r2 = await evalOk(srv, '(cl:package-name cl:*package*)', { session: s });
    assert.equal(value(r2), '"KEYWORD"');
    assert.equal(r2.structuredContent.package, 'KEYWORD');
  });

  test('multiple definitions: (add (mul *x* *y*) 2) => 52', async () => {
    const s = await createSession(srv);
    await evalOk(srv, '(defun add (a b) (+ a b))', { session: s });
    await evalOk(srv, '(defun mul (a b) (* a b))', { session: s });
    await evalOk(srv, '(defvar *x* 10)', { session: s });
    await evalOk(srv, '(defvar *y* 5)', { session: s });
    assert.equal(await evalValue(srv, '(add (mul *x* *y*) 2)', { session: s }), '52');
  });
});

// ---------------------------------------------------------------------------
// timing-isolation (figures reported by time-execution)
// ---------------------------------------------------------------------------

function timing(r, code) {
  assertOk(r, code);
  const t = r.structuredContent.timing;
  assert.ok(t && typeof t === 'object', `time-execution returned no timing for ${code}: ${JSON.stringify(r.structuredContent)}`);
  for (const k of ['real-time-ms', 'run-time-ms', 'gc-time-ms', 'bytes-allocated', 'allocation-rate-mb-per-sec']) {
    assert.equal(typeof t[k], 'number', `timing.${k} must be a number: ${JSON.stringify(t)}`);
    assert.ok(Number.isFinite(t[k]) && t[k] >= 0, `timing.${k} must be finite and >= 0: ${JSON.stringify(t)}`);
  }
  return t;
}

async function realMs(code, session) {
  const r = await timeExecution(srv, code, { session });
  return timing(r, code)['real-time-ms'];
}

async function tries(n, code, session) {
  const xs = [];
  for (let i = 0; i < n; i++) xs.push(await realMs(code, session));
  return xs;
}

const fmt = (xs) => xs.map((x) => x.toFixed(4)).join(', ');

describe('seed: timing-isolation', () => {
  let ts;
  before(async () => {
    ts = await createSession(srv, 'timing');
    // warm the image up (first evaluations page code in)
    for (let i = 0; i < 3; i++) {
      await timeExecution(srv, '(loop repeat 1000 sum 1)', { session: ts });
      await timeExecution(srv, '(+ 1 2 3)', { session: ts });
    }
  });

  test('result shape: result, values, output, package, session, timing', async () => {
    const r = await timeExecution(srv, '(+ 1 2 3)', { session: ts });
    const t = timing(r, '(+ 1 2 3)');
    const sc = r.structuredContent;
    assert.equal(sc.result, '6');
    assert.deepEqual(sc.values, ['6']);
    assert.equal(sc.output, '');
    assert.equal(sc.package, 'COMMON-LISP-USER');
    assert.equal(sc.session, ts);
    assert.ok(t['real-time-ms'] < 10, JSON.stringify(t));
    assert.equal(sc.error, undefined);
  });

  test('minimal code: nil takes < 1 ms (best of 5)', async () => {
    const xs = await tries(5, 'nil', ts);
    assert.ok(Math.min(...xs) < 1.0, `nil: ${fmt(xs)} ms`);
  });

  test('measurement overhead only: (progn) takes < 0.1 ms (best of 5)', async () => {
    const xs = await tries(5, '(progn)', ts);
    assert.ok(Math.min(...xs) < 0.1, `(progn): ${fmt(xs)} ms`);
  });

  test('consistent fast code: std-dev of 10 x (+ 1 2 3) < 0.5 ms (best of 3 rounds)', async () => {
    const rounds = [];
    for (let k = 0; k < 3; k++) {
      const xs = await tries(10, '(+ 1 2 3)', ts);
      rounds.push(xs);
      if (stddev(xs) < 0.5) break;
    }
    const best = Math.min(...rounds.map(stddev));
    assert.ok(best < 0.5, `std-devs ${rounds.map(stddev).map((x) => x.toFixed(4))}; rounds: ${rounds.map(fmt).join(' | ')}`);
  });

  test('sleep accuracy: (sleep 0.1) is 100..105 ms', async () => {
    const xs = await tries(5, '(sleep 0.1)', ts);
    for (const x of xs) assert.ok(x >= 100.0, `(sleep 0.1) reported ${x} ms < 100: ${fmt(xs)}`);
    assert.ok(Math.min(...xs) < 105.0, `(sleep 0.1) best ${Math.min(...xs)} ms >= 105: ${fmt(xs)}`);
  });

  test('sleeping is not CPU time: run-time-ms of (sleep 0.1) is well below real time', async () => {
    const r = await timeExecution(srv, '(sleep 0.1)', { session: ts });
    const t = timing(r, '(sleep 0.1)');
    assert.ok(t['run-time-ms'] < 50, JSON.stringify(t));
  });

  test('CPU-bound stability: two (loop repeat 100000 sum 1) within 0.5 ms (best of 5 each)', async () => {
    const code = '(loop repeat 100000 sum 1)';
    const r = await timeExecution(srv, code, { session: ts });
    assert.equal(r.structuredContent.result, '100000');
    const a = await tries(5, code, ts);
    const b = await tries(5, code, ts);
    const d = Math.abs(Math.min(...a) - Math.min(...b));
    assert.ok(d < 0.5, `difference ${d} ms; first: ${fmt(a)}; second: ${fmt(b)}`);
  });

  test('large result no impact: sum/collect ratio < 2 (best of 5 each)', async () => {
    const r = await timeExecution(srv, '(length (loop repeat 1000 collect 1))', { session: ts });
    assert.equal(r.structuredContent.result, '1000');
    const sum = await tries(5, '(loop repeat 1000 sum 1)', ts);
    const col = await tries(5, '(loop repeat 1000 collect 1)', ts);
    const ratio = Math.min(...sum) / Math.min(...col);
    assert.ok(ratio < 2.0, `ratio ${ratio}; sum: ${fmt(sum)}; collect: ${fmt(col)}`);
  });

  test('timing boundaries: print START / sleep 0.05 / print END is 50..55 ms and output has both', async () => {
    const code = "(progn (print 'START) (sleep 0.05) (print 'END))";
    const xs = [];
    for (let i = 0; i < 5; i++) {
      const r = await timeExecution(srv, code, { session: ts });
      const t = timing(r, code);
      const out = r.structuredContent.output;
      assert.equal(typeof out, 'string');
      assert.ok(out.includes('START') && out.includes('END'), `output: ${JSON.stringify(out)}`);
      assert.ok(out.indexOf('START') < out.indexOf('END'));
      assert.equal(r.structuredContent.result, 'END');
      xs.push(t['real-time-ms']);
    }
    for (const x of xs) assert.ok(x > 50.0, `reported ${x} ms <= 50: ${fmt(xs)}`);
    assert.ok(Math.min(...xs) < 55.0, `best ${Math.min(...xs)} ms >= 55: ${fmt(xs)}`);
  });

  test('isolation validator: reported time < half of the client-measured round trip', async () => {
    const ratios = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const r = await timeExecution(srv, '(+ 1 2 3)', { session: ts });
      const total = performance.now() - t0;
      const rep = timing(r, '(+ 1 2 3)')['real-time-ms'];
      ratios.push(rep / total);
    }
    assert.ok(Math.min(...ratios) < 0.5, `reported/round-trip ratios: ${fmt(ratios)}`);
  });

  test('serialization excluded: (make-list 100000) real-time < 50 ms, allocation counted', async () => {
    const xs = [];
    let last;
    for (let i = 0; i < 3; i++) {
      const r = await timeExecution(srv, '(make-list 100000)', { session: ts });
      last = timing(r, '(make-list 100000)');
      xs.push(last['real-time-ms']);
      assert.equal(typeof r.structuredContent.result, 'string');
      assert.ok(r.structuredContent.result.startsWith('(NIL NIL'), r.structuredContent.result.slice(0, 100));
    }
    assert.ok(Math.min(...xs) < 50, `(make-list 100000): ${fmt(xs)} ms`);
    // 100000 conses are 1.6 MB on a 64-bit SBCL (get-bytes-consed counts whole allocation
    // regions, so allow some slack either way)
    assert.ok(last['bytes-allocated'] >= 1_200_000 && last['bytes-allocated'] < 50_000_000, JSON.stringify(last));
    assert.ok(last['allocation-rate-mb-per-sec'] > 0, JSON.stringify(last));
  });

  test('GC time is reported: (sb-ext:gc :full t) has gc-time-ms > 0', async () => {
    const r = await timeExecution(srv, '(progn (sb-ext:gc :full t) 1)', { session: ts });
    const t = timing(r, 'gc');
    assert.ok(t['gc-time-ms'] > 0, JSON.stringify(t));
    assert.ok(t['gc-time-ms'] <= t['real-time-ms'] + 1, JSON.stringify(t));
  });

  test('CPU-bound work: run-time-ms tracks real-time-ms', async () => {
    // best of 5: other test files compete for the CPU
    const code = '(let ((s 0)) (dotimes (i 20000000 s) (setf s (logand (+ s i) #xffff))))';
    const ts5 = [];
    for (let i = 0; i < 5; i++) {
      const t = timing(await timeExecution(srv, code, { session: ts }), code);
      assert.ok(t['real-time-ms'] > 1, JSON.stringify(t));
      ts5.push(t);
      if (t['run-time-ms'] > 0.5 * t['real-time-ms']) break;
    }
    const best = Math.max(...ts5.map((t) => t['run-time-ms'] / t['real-time-ms']));
    assert.ok(best > 0.5, `run/real ratios: ${JSON.stringify(ts5)}`);
  });

  test('code with errors: timing is still reported', async () => {
    const r = await timeExecution(srv, '(progn (sleep 0.02) (error "boom-timed"))', { session: ts });
    assert.equal(r.isError, true, JSON.stringify(r));
    const sc = r.structuredContent;
    assert.equal(sc.error.type, 'SIMPLE-ERROR');
    assert.ok(sc.error.message.includes('boom-timed'));
    assert.ok(sc.timing && sc.timing['real-time-ms'] >= 20, JSON.stringify(sc.timing));
    assert.ok(sc.timing['real-time-ms'] < 1000, JSON.stringify(sc.timing));
  });

  test('evaluate-lisp capture-time: timing only when asked, text has "; Timing:"', async () => {
    const r1 = await evalOk(srv, '(sleep 0.01)', { session: ts, captureTime: true });
    const t = r1.structuredContent.timing;
    assert.ok(t, JSON.stringify(r1.structuredContent));
    for (const k of ['real-time-ms', 'run-time-ms', 'gc-time-ms', 'bytes-allocated']) assert.equal(typeof t[k], 'number', k);
    assert.ok(t['real-time-ms'] >= 10 && t['real-time-ms'] < 1000, JSON.stringify(t));
    assert.match(text(r1), /; Timing:/);
    const r2 = await evalOk(srv, '(sleep 0.01)', { session: ts });
    assert.equal(r2.structuredContent.timing, undefined);
    assert.doesNotMatch(text(r2), /; Timing:/);
    const r3 = await evalOk(srv, '(+ 1 1)', { session: ts, captureTime: false });
    assert.equal(r3.structuredContent.timing, undefined);
  });
});
