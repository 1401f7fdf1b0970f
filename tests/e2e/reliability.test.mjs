// Reliability: the walls around a session (it cannot reach the server or a sibling), the clean-up
// of what user code starts, the limits (output, sessions, idle time, heap, stack), and one
// misbehaving session among ten that leaves the other nine untouched.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import {
  startServer, evaluate, evalOk, evalValue, evalError, createSession, callTool, closeSession,
  childPids, isAlive, sleep, value, waitUntil,
} from './helpers.mjs';

/** PIDs whose command line contains marker (a unique number we gave /bin/sleep). */
function pidsWithMarker(marker) {
  const out = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (cmd.includes(marker) && isAlive(Number(d))) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

describe('a session cannot reach the server or another session', () => {
  let srv;
  before(async () => {
    srv = await startServer();
  });
  after(async () => srv?.close());

  test('killing the server pid from Lisp, from a child program, and with kill -1 fails', async () => {
    await evalOk(srv, '(require :sb-posix)');
    const attempt = (form) =>
      `(handler-case (progn ${form} :done) (error (e) (format nil "refused: ~A" e)))`;
    const direct = await evalValue(srv, attempt(`(sb-posix:kill ${srv.pid} 9)`));
    assert.match(direct, /refused/, 'kill of the server pid from Lisp must fail');
    const all = await evalValue(srv, attempt('(sb-posix:kill -1 9)'));
    assert.match(all, /refused/, 'kill -1 must find nothing to signal');
    const viaChild = await evalOk(
      srv,
      `(sb-ext:process-exit-code (sb-ext:run-program "/bin/kill" '("-9" "${srv.pid}") :output *standard-output* :error *standard-output*))`,
    );
    assert.notEqual(value(viaChild), '0', 'a child program must not be able to kill the server');
    assert.ok(isAlive(srv.pid), 'the server survived');
    assert.equal(await evalValue(srv, '(+ 1 2)'), '3');
  });

  test("the server's memory and a sibling worker are out of reach", async () => {
    const other = await createSession(srv, 'sibling');
    assert.equal(await evalValue(srv, '(defvar *mine* 7)', { session: other }), '*MINE*');
    const workers = childPids(srv.pid);
    assert.ok(workers.length >= 2, `expected two workers, saw ${workers}`);
    assert.equal(await evalValue(srv, `(probe-file "/proc/${srv.pid}/mem")`), 'NIL');
    await evalOk(srv, '(require :sb-posix)');
    for (const pid of workers) {
      const r = await evalValue(
        srv,
        `(handler-case (progn (sb-posix:kill ${pid} 9) :killed) (error () :refused))`,
      );
      // A worker is process 1 of its own PID namespace: the pids the server sees name
      // nothing it can reach, its own included.
      assert.equal(r, ':REFUSED', `kill of worker ${pid} from a session`);
    }
    assert.equal(await evalValue(srv, '*mine*', { session: other }), '7', 'the sibling lives on');
    assert.equal(await evalValue(srv, '(+ 2 2)'), '4');
  });
});

describe('what user code starts ends with its session', () => {
  let srv;
  before(async () => {
    srv = await startServer();
  });
  after(async () => srv?.close());

  for (const how of ['close-session', 'reset-session']) {
    test(`a background child process is gone after ${how}`, async () => {
      const marker = `${Math.floor(100000 + Math.random() * 800000)}.5`;
      const s = await createSession(srv);
      await evalOk(srv, `(progn (sb-ext:run-program "/bin/sleep" '("${marker}") :wait nil) t)`, { session: s });
      assert.ok(await waitUntil(() => pidsWithMarker(marker).length === 1), 'the child started');
      if (how === 'close-session') await closeSession(srv, s);
      else await callTool(srv, 'reset-session', { session: s });
      assert.ok(await waitUntil(() => pidsWithMarker(marker).length === 0), `child still alive after ${how}`);
    });
  }

  test('a fork bomb is contained and cleaned up by close-session', async () => {
    const s = await createSession(srv);
    const marker = `${Math.floor(100000 + Math.random() * 800000)}.25`;
    // Each child starts two more sleepers through a shell: a bounded bomb (at most 2^7 shells).
    const bomb = `b() { [ "$1" -gt 6 ] && exec sleep ${marker}; b $(($1+1)) & b $(($1+1)) & wait; }; b 0`;
    await evalOk(srv, `(progn (sb-ext:run-program "/bin/sh" (list "-c" ${JSON.stringify(bomb)}) :wait nil) t)`, {
      session: s,
    });
    assert.ok(await waitUntil(() => pidsWithMarker(marker).length > 20, 10000), 'the bomb went off');
    await closeSession(srv, s);
    assert.ok(await waitUntil(() => pidsWithMarker(marker).length === 0, 10000), 'the bomb outlived its session');
    assert.equal(await evalValue(srv, '(+ 40 2)'), '42');
  });
});

describe('limits', () => {
  test('output past --max-output-bytes is dropped as it is written, and counted', async () => {
    const srv = await startServer({ args: ['--max-output-bytes', '1000'] });
    try {
      const r = await evalOk(srv, '(progn (loop repeat 10000 do (princ "x")) :done)');
      assert.equal(r.structuredContent.stdout.length, 1000);
      assert.equal(r.structuredContent.truncated.stdout, 9000);
      assert.match(r.content[0].text, /stdout truncated: 9000 bytes dropped/);
      // An endless printer under a time limit costs no more than the cap, and the session lives.
      await evalOk(srv, '(defun still-here () :yes)');
      const e = await evaluate(srv, '(loop (princ "y"))', { timeoutSeconds: 1 });
      assert.equal(e.structuredContent.error.type, 'TIMEOUT');
      assert.equal(e.structuredContent.stdout.length, 1000);
      assert.equal(e.structuredContent.error['session-state'], 'kept');
      assert.equal(await evalValue(srv, '(still-here)'), ':YES');
      // A printed value past the cap is cut the same way.
      const big = await evalOk(srv, '(make-string 50000000 :initial-element #\\a)');
      assert.ok(value(big).length <= 1000, 'value cut to the cap');
      assert.ok(big.structuredContent.truncated.values > 49_000_000);
    } finally {
      await srv.close();
    }
  });

  test('--max-sessions refuses one more session with a clear error', async () => {
    const srv = await startServer({ args: ['--max-sessions', '2'] });
    try {
      await createSession(srv);
      await createSession(srv);
      const r = await callTool(srv, 'create-session', {});
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /limit of 2 live sessions/);
    } finally {
      await srv.close();
    }
  });

  test('--idle-timeout closes idle sessions and says so when the client comes back', async () => {
    const srv = await startServer({ args: ['--idle-timeout', '1'] });
    try {
      const s = await createSession(srv);
      await evalOk(srv, '(defvar *v* 1)', { session: s });
      await sleep(2500);
      const r = await evaluate(srv, '*v*', { session: s });
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /idle/);
      assert.equal(await evalValue(srv, '(+ 1 1)'), '2', 'new work is served');
    } finally {
      await srv.close();
    }
  });

  test('heap and stack exhaustion are errors the session survives, again and again', async () => {
    const srv = await startServer({ args: ['--session-memory-mb', '256'] });
    try {
      await evalOk(srv, '(defun deep (n) (1+ (deep n)))');
      for (let i = 0; i < 3; i++) {
        const stack = await evalError(srv, '(deep 1)');
        assert.match(stack.type, /STORAGE-CONDITION|STACK-EXHAUSTED/);
        assert.equal(stack['session-state'], 'kept');
        const heap = await evalError(srv, '(length (make-array (expt 10 10)))');
        assert.match(heap.type, /HEAP-EXHAUSTED|STORAGE-CONDITION/);
        assert.equal(heap['session-state'], 'kept');
      }
      const gradual = await evaluate(srv, '(let ((l nil)) (loop (push (make-array 100000) l)))', { timeoutSeconds: 60 });
      assert.equal(gradual.isError, true);
      assert.match(gradual.structuredContent.error.type, /HEAP-EXHAUSTED|STORAGE-CONDITION|SESSION-DIED/);
      assert.equal(await evalValue(srv, '(+ 1 2)'), '3');
    } finally {
      await srv.close();
    }
  });
});

describe('misbehaviour stays in its own session', () => {
  let srv;
  before(async () => {
    srv = await startServer({ args: ['--interrupt-grace', '1'] });
  });
  after(async () => srv?.close());

  test('a thread that keeps printing after its evaluation returned shows up as console output', async () => {
    const s = await createSession(srv);
    const r = await evalOk(
      srv,
      '(progn (sb-thread:make-thread (lambda () (loop repeat 5 do (format t "tick~%") (finish-output) (sleep 0.1)))) :started)',
      { session: s },
    );
    assert.equal(value(r), ':STARTED');
    await sleep(800);
    const later = await evalOk(srv, '(+ 1 1)', { session: s });
    const console = (r.structuredContent.console || '') + (later.structuredContent.console || '');
    assert.match(console, /tick/);
    assert.equal(value(later), '2');
  });

  test('ten sessions in parallel: one misbehaves, nine are unaffected', async () => {
    const ids = [];
    for (let i = 0; i < 10; i++) ids.push(await createSession(srv, `p${i}`));
    await Promise.all(ids.map((s, i) => evalOk(srv, `(defun f (x) (+ x ${i}))`, { session: s })));
    const bad = ids[0];
    const misbehaviours = [
      evaluate(srv, '(loop)', { session: bad, timeoutSeconds: 1 }),
      evaluate(srv, '(sb-sys:without-interrupts (loop))', { session: bad, timeoutSeconds: 0.5 }),
      evaluate(srv, '(sb-ext:exit :abort t)', { session: bad }),
    ];
    const good = ids.slice(1).map(async (s, k) => {
      const i = k + 1;
      for (let n = 0; n < 20; n++) assert.equal(await evalValue(srv, `(f ${n})`, { session: s }), String(n + i));
    });
    const [r1, r2, r3] = await Promise.all(misbehaviours);
    await Promise.all(good);
    assert.equal(r1.structuredContent.error.type, 'TIMEOUT');
    assert.equal(r2.structuredContent.error['session-state'], 'lost');
    assert.equal(r3.structuredContent.error['session-state'], 'lost');
    const back = await evalOk(srv, '(fboundp (quote f))', { session: bad });
    assert.equal(value(back), 'NIL', 'the misbehaving session restarted fresh');
    for (const [k, s] of ids.slice(1).entries()) assert.equal(await evalValue(srv, '(f 100)', { session: s }), String(101 + k));
  });
});

describe('the warm pool', () => {
  test('keeps --pool-size images ready, refills after each take, and hands out clean ones', async () => {
    const srv = await startServer({ args: ['--pool-size', '2'] });
    try {
      assert.ok(await waitUntil(() => childPids(srv.pid).length === 2), 'two images wait before any session');
      await evalOk(srv, '(defvar *from-default* 1)');
      const s = await createSession(srv);
      assert.equal(await evalValue(srv, "(boundp '*from-default*)", { session: s }), 'NIL');
      // default + s in use, and the pool refilled to two beside them.
      assert.ok(await waitUntil(() => childPids(srv.pid).length === 4), `workers: ${childPids(srv.pid)}`);
      await callTool(srv, 'reset-session', { session: s });
      assert.equal(await evalValue(srv, "(boundp '*from-default*)", { session: s }), 'NIL');
      assert.ok(await waitUntil(() => childPids(srv.pid).length === 4), 'the reset image came from the pool, which refilled');
    } finally {
      await srv.close();
    }
  });

  test('--pool-size 0 starts images only when a session needs one', async () => {
    const srv = await startServer({ args: ['--pool-size', '0'] });
    try {
      await sleep(300);
      assert.equal(childPids(srv.pid).length, 0);
      await evalOk(srv, '(+ 1 1)');
      assert.equal(childPids(srv.pid).length, 1);
    } finally {
      await srv.close();
    }
  });
});
