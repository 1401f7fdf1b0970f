// MCP / JSON-RPC over stdio, spoken by hand (newline-delimited JSON): version negotiation,
// error codes, ids, notifications, requests before initialize, ping, logging, EOF shutdown,
// and the command line (--help, --version, bad options).

import { test as nodeTest, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RawServer, runBinary, withStderr, childPids, pgrepChildren, cmdline, killZeroSucceeds, sleep, within, TOOL_NAMES } from './helpers.mjs';

const servers = [];
const test = withStderr(nodeTest, () => servers);

function raw(opts) {
  const s = new RawServer(opts);
  servers.push(s);
  return s;
}

after(async () => {
  for (const s of servers) {
    await s.close({ timeout: 5000 });
  }
});

const INIT = (protocolVersion = '2025-11-25') => ({
  protocolVersion,
  capabilities: {},
  clientInfo: { name: 'lispmcp-e2e-protocol', version: '1.0.0' },
});

function assertError(resp, code, what = '') {
  assert.ok(resp.error, `${what}: expected an error, got ${JSON.stringify(resp).slice(0, 500)}`);
  assert.equal(resp.jsonrpc, '2.0');
  assert.equal(resp.error.code, code, `${what}: ${JSON.stringify(resp.error)}`);
  assert.equal(typeof resp.error.message, 'string');
  assert.ok(resp.error.message.length > 0);
  assert.ok(!('result' in resp), `${what}: error responses have no result`);
}

// ---------------------------------------------------------------------------
describe('initialize', () => {
  test('negotiates 2025-11-25 and describes the server', async () => {
    const s = raw();
    const r = await s.request('initialize', INIT());
    assert.equal(r.jsonrpc, '2.0');
    assert.equal(r.result.protocolVersion, '2025-11-25');
    assert.equal(typeof r.result.serverInfo?.name, 'string');
    assert.equal(typeof r.result.serverInfo?.version, 'string');
    assert.ok(r.result.capabilities && typeof r.result.capabilities === 'object');
    assert.ok(r.result.capabilities.tools, JSON.stringify(r.result.capabilities));
    await s.notify('notifications/initialized');
    const list = await s.request('tools/list', {});
    assert.deepEqual(list.result.tools.map((t) => t.name).sort(), [...TOOL_NAMES].sort());
    assert.equal(list.result.nextCursor, undefined);
    assert.deepEqual(s.badLines, []);
  });

  for (const v of ['2025-06-18', '2025-03-26']) {
    test(`accepts ${v} and answers with it`, async () => {
      const s = raw();
      const r = await s.request('initialize', INIT(v));
      assert.equal(r.result.protocolVersion, v);
      await s.notify('notifications/initialized');
      const ev = await s.callTool('evaluate-lisp', { code: '(+ 1 2)' });
      assert.ok(ev.result, JSON.stringify(ev));
      assert.equal(ev.result.content[0].type, 'text');
      assert.match(ev.result.content[0].text, /=> 3/);
    });
  }

  test('an unknown version gets 2025-11-25 back', async () => {
    const s = raw();
    const r = await s.request('initialize', INIT('1999-01-01'));
    assert.equal(r.result.protocolVersion, '2025-11-25');
  });

  test('a request before initialize is refused; ping is allowed; initialize then works', async () => {
    const s = raw();
    const early = await s.request('tools/list', {});
    assert.ok(early.error, `tools/list before initialize must be an error: ${JSON.stringify(early)}`);
    assert.equal(typeof early.error.code, 'number');
    const early2 = await s.request('tools/call', { name: 'evaluate-lisp', arguments: { code: '(+ 1 2)' } });
    assert.ok(early2.error, `tools/call before initialize must be an error: ${JSON.stringify(early2)}`);
    const pong = await s.request('ping');
    assert.deepEqual(pong.result, {});
    await s.initialize();
    const list = await s.request('tools/list', {});
    assert.equal(list.result.tools.length, 6);
  });

  test('a duplicate initialize is handled sanely and the connection keeps working', async () => {
    const s = raw();
    await s.initialize();
    await s.callTool('evaluate-lisp', { code: '(defvar *dup* 5)' });
    const again = await s.request('initialize', INIT());
    assert.ok(again.result || again.error, JSON.stringify(again));
    if (again.result) assert.equal(again.result.protocolVersion, '2025-11-25');
    else assert.equal(typeof again.error.code, 'number');
    const pong = await s.request('ping');
    assert.deepEqual(pong.result, {});
    const ev = await s.callTool('evaluate-lisp', { code: '*dup*' });
    assert.deepEqual(ev.result.structuredContent.values, ['5'], 'the session survived the second initialize');
  });

  test('initialize without params is -32602', async () => {
    const s = raw();
    const r = await s.request('initialize', undefined);
    assertError(r, -32602, 'initialize without params');
  });
});

// ---------------------------------------------------------------------------
describe('JSON-RPC errors', () => {
  let s;
  before(async () => {
    s = raw();
    await s.initialize();
  });

  test('malformed JSON: -32700 with id null, and the server keeps serving', async () => {
    s.markSync();
    await s.sendRaw('{"jsonrpc": "2.0", "id": 1, "method": ');
    const { between } = await s.sync();
    assert.equal(between.length, 1, JSON.stringify(between));
    assertError(between[0], -32700, 'malformed');
    assert.equal(between[0].id, null);
    assert.ok('id' in between[0], 'the id member must be present (null)');
    const ev = await s.callTool('evaluate-lisp', { code: '(+ 1 2)' });
    assert.deepEqual(ev.result.structuredContent.values, ['3']);
  });

  test('a request without method: -32600', async () => {
    s.markSync();
    await s.send({ jsonrpc: '2.0', id: 78 });
    const { between } = await s.sync();
    assert.equal(between.length, 1, JSON.stringify(between));
    assertError(between[0], -32600, 'no method');
    assert.ok(between[0].id === 78 || between[0].id === null, JSON.stringify(between[0]));
  });

  test('a non-string method: -32600', async () => {
    s.markSync();
    await s.send({ jsonrpc: '2.0', id: 79, method: 42 });
    const { between } = await s.sync();
    assert.equal(between.length, 1, JSON.stringify(between));
    assertError(between[0], -32600, 'method 42');
  });

  test('a bad jsonrpc version: -32600', async () => {
    for (const [jsonrpc, id] of [['1.0', 80], [2, 81], [undefined, 82]]) {
      s.markSync();
      const m = { id, method: 'ping' };
      if (jsonrpc !== undefined) m.jsonrpc = jsonrpc;
      await s.send(m);
      const { between } = await s.sync();
      assert.equal(between.length, 1, `jsonrpc=${jsonrpc}: ${JSON.stringify(between)}`);
      assertError(between[0], -32600, `jsonrpc=${jsonrpc}`);
      assert.ok(between[0].id === id || between[0].id === null);
    }
  });

  test('an unknown method: -32601 with the request id', async () => {
    const r = await s.request('no/such/method', {});
    assertError(r, -32601, 'unknown method');
    const r2 = await s.request('resources/list', {});
    assert.ok(r2.error, JSON.stringify(r2));
    assert.equal(r2.error.code, -32601);
  });

  test('tools/call without name: -32602 naming "name"', async () => {
    const r = await s.request('tools/call', { arguments: { code: '1' } });
    assertError(r, -32602, 'tools/call without name');
    assert.match(r.error.message, /name/i);
  });

  test('tools/call with params that are not an object: -32602', async () => {
    const r = await s.request('tools/call', [1, 2]);
    assertError(r, -32602, 'array params');
  });

  test('evaluate-lisp without code: -32602 naming "code"', async () => {
    const r = await s.callTool('evaluate-lisp', {});
    assertError(r, -32602, 'no code');
    assert.match(r.error.message, /code/);
  });

  test('evaluate-lisp with code: 42: -32602 naming "code"', async () => {
    const r = await s.callTool('evaluate-lisp', { code: 42 });
    assertError(r, -32602, 'code 42');
    assert.match(r.error.message, /code/);
  });

  test('evaluate-lisp with arguments that are not an object: -32602', async () => {
    const r = await s.request('tools/call', { name: 'evaluate-lisp', arguments: '(+ 1 2)' });
    assertError(r, -32602, 'arguments string');
  });

  test('an unknown tool: -32602 or an isError result, naming it', async () => {
    const r = await s.callTool('no-such-tool', {});
    if (r.error) {
      assert.equal(r.error.code, -32602);
      assert.match(r.error.message, /no-such-tool/);
    } else {
      assert.equal(r.result.isError, true);
      assert.match(JSON.stringify(r.result), /no-such-tool/);
    }
  });

  test('after all of that, the connection is intact', async () => {
    const ev = await s.callTool('evaluate-lisp', { code: '"still fine"' });
    assert.deepEqual(ev.result.structuredContent.values, ['"still fine"']);
    assert.deepEqual(s.badLines, []);
  });
});

// ---------------------------------------------------------------------------
describe('ids, notifications, ping, logging', () => {
  let s;
  before(async () => {
    s = raw();
    await s.initialize();
  });

  test('string and number ids are echoed back exactly', async () => {
    for (const id of ['abc-123', '', 'ид-λ-日本', '42', 0, 7, -5, 2147483648, 9007199254740991]) {
      const r = await s.request('ping', {}, { id });
      assert.equal(r.id, id, `id ${JSON.stringify(id)} came back as ${JSON.stringify(r.id)}`);
      assert.equal(typeof r.id, typeof id);
      assert.deepEqual(r.result, {});
    }
    const ev = await s.request('tools/call', { name: 'evaluate-lisp', arguments: { code: '(+ 1 1)' } }, { id: 'eval-with-string-id' });
    assert.equal(ev.id, 'eval-with-string-id');
    assert.deepEqual(ev.result.structuredContent.values, ['2']);
  });

  test('ping with and without params answers {}', async () => {
    assert.deepEqual((await s.request('ping')).result, {});
    assert.deepEqual((await s.request('ping', {})).result, {});
  });

  test('notifications get no response (known and unknown ones)', async () => {
    s.markSync();
    await s.notify('notifications/initialized');
    await s.notify('notifications/no-such-thing', { x: 1 });
    await s.notify('notifications/cancelled', { requestId: 'never-sent' });
    await s.notify('notifications/roots/list_changed');
    await s.notify('tools/list'); // a request method sent as a notification
    const { between } = await s.sync();
    assert.deepEqual(between, []);
  });

  test('logging/setLevel returns {}', async () => {
    const r = await s.request('logging/setLevel', { level: 'debug' });
    assert.deepEqual(r.result, {}, JSON.stringify(r));
    const r2 = await s.request('logging/setLevel', { level: 'error' });
    assert.deepEqual(r2.result, {});
  });

  test('a response sent by the client (not a request) gets no response', async () => {
    s.markSync();
    await s.send({ jsonrpc: '2.0', id: 'from-client', result: {} });
    const { between } = await s.sync();
    assert.deepEqual(between, []);
  });

  test('ping is answered promptly while an evaluation is running', async () => {
    const id = s.newId();
    await s.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(progn (sleep 2) :slept)' } } });
    await sleep(200);
    const t0 = Date.now();
    const pong = await s.request('ping');
    const dt = Date.now() - t0;
    assert.deepEqual(pong.result, {});
    assert.ok(dt < 1000, `ping took ${dt} ms during an evaluation`);
    const done = await s.response(id);
    assert.deepEqual(done.result.structuredContent.values, [':SLEPT']);
  });

  test('every stdout line so far was a JSON-RPC message', () => {
    assert.deepEqual(s.badLines, []);
    for (const m of s.messages) {
      assert.equal(m.jsonrpc, '2.0');
      assert.ok('id' in m || 'method' in m, JSON.stringify(m));
    }
  });
});

// ---------------------------------------------------------------------------
describe('shutdown', () => {
  // No pool here: these tests count a server's workers one by one.
  async function startWithWorkers() {
    const s = raw({ args: ['--pool-size', '0'] });
    await s.initialize();
    const a = await s.callTool('evaluate-lisp', { code: '(+ 1 2)' });
    assert.deepEqual(a.result.structuredContent.values, ['3']);
    const c = await s.callTool('create-session', { name: 'second' });
    const sid = c.result.structuredContent.session;
    const b = await s.callTool('evaluate-lisp', { code: '(+ 3 4)', session: sid });
    assert.deepEqual(b.result.structuredContent.values, ['7']);
    return { s, sid };
  }

  function sbclChildren(pid) {
    const kids = pgrepChildren(pid);
    const viaProc = childPids(pid);
    assert.deepEqual([...kids].sort(), [...viaProc].sort(), 'pgrep -P and /proc agree');
    return kids.filter((k) => /sbcl|lispmcp-worker/.test(cmdline(k)));
  }

  // The server reaps every worker before it exits: by the time its exit is seen, none may
  // remain, not even as a zombie.
  async function assertAllGone(pids) {
    for (const p of pids) {
      let state = '';
      try {
        const st = readFileSync(`/proc/${p}/stat`, 'utf8');
        const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
        state = ` state ${f[0]}, ppid ${f[1]}${f[0] === 'Z' ? ' (a zombie: exited but never reaped by the server)' : ''}`;
      } catch {
        /* gone */
      }
      assert.ok(!killZeroSucceeds(p), `worker ${p} still exists after the server exited:${state}`);
    }
  }

  test('EOF on stdin: exit code 0 and no worker left behind', { timeout: 60_000 }, async () => {
    const { s } = await startWithWorkers();
    const workers = sbclChildren(s.pid);
    assert.ok(workers.length >= 2, `expected at least 2 sbcl workers, children: ${childPids(s.pid).map((p) => `${p}:${cmdline(p)}`).join(', ')}`);
    const t0 = Date.now();
    const info = await s.close({ timeout: 15_000 });
    assert.deepEqual(info, { code: 0, signal: null }, `exit after EOF (took ${Date.now() - t0} ms)`);
    assert.ok(Date.now() - t0 < 10_000, `shutdown took ${Date.now() - t0} ms`);
    await assertAllGone(workers);
  });

  test('EOF while an evaluation is running: prompt exit code 0, the worker is killed', { timeout: 60_000 }, async () => {
    const { s } = await startWithWorkers();
    const workers = sbclChildren(s.pid);
    await s.send({ jsonrpc: '2.0', id: 'busy', method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(sleep 300)' } } });
    await sleep(300);
    const t0 = Date.now();
    const info = await s.close({ timeout: 20_000 });
    const dt = Date.now() - t0;
    assert.deepEqual(info, { code: 0, signal: null });
    assert.ok(dt < 10_000, `shutdown with a running evaluation took ${dt} ms`);
    await assertAllGone(workers);
  });

  test('EOF right after initialize (no worker ever started): exit code 0', async () => {
    const s = raw();
    await s.initialize();
    const info = await s.close();
    assert.deepEqual(info, { code: 0, signal: null });
  });

  test('EOF with nothing ever sent: exit code 0, nothing on stdout', async () => {
    const s = raw();
    const info = await s.close();
    assert.deepEqual(info, { code: 0, signal: null });
    assert.equal(s.stdoutBytes, 0);
  });

  test('a closed session\'s worker process is gone', { timeout: 30_000 }, async () => {
    const { s, sid } = await startWithWorkers();
    const before = sbclChildren(s.pid);
    const r = await s.callTool('close-session', { session: sid });
    assert.equal(r.result.structuredContent.closed, true);
    await sleep(500);
    const afterClose = sbclChildren(s.pid);
    assert.equal(afterClose.length, before.length - 1, `before ${before}, after ${afterClose}`);
    const gone = before.filter((p) => !afterClose.includes(p));
    await assertAllGone(gone);
    await s.close();
  });

  test('SIGTERM: the server exits and takes its workers with it', { timeout: 30_000 }, async () => {
    const { s } = await startWithWorkers();
    const workers = sbclChildren(s.pid);
    s.proc.kill('SIGTERM');
    const info = await within(s.exited, 10_000);
    assert.ok(info, 'server did not exit within 10 s of SIGTERM');
    await assertAllGone(workers, 5000);
  });
});

// ---------------------------------------------------------------------------
describe('command line', () => {
  test('--help prints usage and exits 0', async () => {
    const r = await runBinary(['--help']);
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout + r.stderr;
    for (const opt of ['--eval-timeout', '--sbcl', '--max-sessions', '--session-memory-mb', '--idle-timeout', '--max-output-bytes', '--http', '--token', '--log-level'])
      assert.ok(out.includes(opt), `--help does not mention ${opt}`);
  });

  test('--version prints a version and exits 0', async () => {
    const r = await runBinary(['--version']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout + r.stderr, /\d+\.\d+/);
  });

  for (const [args, name] of [
    [['--no-such-option'], '--no-such-option'],
    [['--eval-timeout', 'abc'], '--eval-timeout'],
    [['--eval-timeout', '-3'], '--eval-timeout'],
    [['--max-sessions', 'lots'], '--max-sessions'],
    [['--session-memory-mb'], '--session-memory-mb'],
  ]) {
    test(`bad option ${args.join(' ')}: one-line error naming it, exit 2`, async () => {
      const r = await runBinary(args);
      assert.equal(r.code, 2, `exit ${r.code}, stderr: ${r.stderr}`);
      assert.ok(r.stderr.includes(name), `stderr should name ${name}: ${JSON.stringify(r.stderr)}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${JSON.stringify(r.stderr)}`);
      assert.equal(r.stdout, '', 'nothing on stdout (it is the protocol stream)');
    });
  }

  test('--sbcl pointing nowhere: refused at start as a bad value (exit 2), or evaluation fails and the server survives', { timeout: 30_000 }, async () => {
    const s = raw({ args: ['--sbcl', '/nonexistent/sbcl'] });
    let init;
    try {
      init = await s.request('initialize', INIT(), { timeout: 10_000 });
    } catch {
      const info = await s.exited;
      assert.equal(info.code, 2, `exit ${JSON.stringify(info)}: ${s.stderrText}`);
      assert.match(s.stderrText, /--sbcl|nonexistent/);
      return;
    }
    assert.ok(init.result, JSON.stringify(init));
    await s.notify('notifications/initialized');
    const r = await s.callTool('evaluate-lisp', { code: '(+ 1 2)' });
    assert.ok(r.error || r.result?.isError, JSON.stringify(r));
    const pong = await s.request('ping');
    assert.deepEqual(pong.result, {});
  });
});

describe('stdin closed with calls in progress', () => {
  test('a piped script gets its answers; a call still running after the drain gets SESSION-CLOSED', { timeout: 60_000 }, async () => {
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(progn (sleep 0.3) (* 6 7))' } } },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(sleep 60)' } } },
    ];
    const t0 = Date.now();
    const r = await runBinary([], { input: lines.map((l) => JSON.stringify(l)).join('\n') + '\n', timeout: 30_000 });
    const elapsed = Date.now() - t0;
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(out.map((m) => m.id), [1, 2, 3], 'one response per request, in order');
    assert.deepEqual(out[1].result.structuredContent.values, ['42']);
    assert.equal(out[2].result.isError, true);
    assert.match(out[2].result.content[0].text, /SESSION-CLOSED/);
    assert.ok(elapsed < 15_000, `shutdown took ${elapsed} ms`);
  });
});
