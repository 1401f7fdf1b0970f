// Streamable HTTP: many clients on one server, each with sessions nobody else can touch; the
// security defaults (Host, Origin, token, loopback); DELETE and expiry reaping workers.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  startHttpServer, connectHttp, startServer, evalValue, evaluate, createSession, callTool, childPids, isAlive,
  sleep, runBinary, value, waitUntil,
} from './helpers.mjs';

const JSON_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
const INIT = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function post(url, body, headers = {}) {
  return fetch(url, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });
}

/** POST with node:http, which (unlike fetch) lets a test set the Host header. Resolves the status. */
function postWithHost(url, body, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...JSON_HEADERS, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('many clients, one server', () => {
  let srv;
  before(async () => {
    srv = await startHttpServer();
  });
  after(async () => {
    const exit = await srv.stop();
    assert.deepEqual(exit, { code: 0, signal: null }, 'SIGTERM ends the server cleanly');
  });

  test('the isolation properties of the specification hold across two clients', async () => {
    const a = await connectHttp(srv.url);
    const b = await connectHttp(srv.url);
    try {
      assert.equal(await evalValue(a.client, '(defun square (x) (* x x))'), 'SQUARE');
      assert.equal(await evalValue(a.client, '(square 7)'), '49');
      assert.equal(await evalValue(a.client, '(defvar *x* 42)'), '*X*');
      assert.equal(await evalValue(b.client, "(fboundp 'square)"), 'NIL');
      assert.equal(await evalValue(b.client, "(boundp '*x*)"), 'NIL');
      // A Lisp session made by A is unknown to B: the same error as a made-up id.
      const mine = await createSession(a.client, 'private');
      await evalValue(a.client, '(defvar *secret* 1)', { session: mine });
      const stolen = await evaluate(b.client, '*secret*', { session: mine });
      assert.equal(stolen.isError, true);
      assert.match(stolen.content[0].text, /SESSION-NOT-FOUND/);
      for (const tool of ['reset-session', 'close-session']) {
        const r = await callTool(b.client, tool, { session: mine });
        assert.equal(r.isError, true, `${tool} of another client's session must fail`);
      }
      assert.equal(await evalValue(a.client, '*secret*', { session: mine }), '1', 'still there for A');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('20 concurrent clients: each sees only its own definitions', { timeout: 120_000 }, async () => {
    const clients = await Promise.all(Array.from({ length: 20 }, () => connectHttp(srv.url)));
    try {
      await Promise.all(clients.map((c, k) => evalValue(c.client, `(defun whoami () ${k})`)));
      const seen = await Promise.all(
        clients.map(async (c) => {
          const out = [];
          for (let i = 0; i < 5; i++) out.push(await evalValue(c.client, '(whoami)'));
          return out;
        }),
      );
      seen.forEach((values, k) => assert.deepEqual(values, Array(5).fill(String(k))));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  test('an ended or made-up Mcp-Session-Id gets 404, so the client initializes again', async () => {
    const init = await post(srv.url, INIT);
    assert.equal(init.status, 200);
    const sid = init.headers.get('mcp-session-id');
    assert.match(sid, /^[0-9a-f]{32}$/, '128 random bits');
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    assert.equal((await post(srv.url, ping, { 'Mcp-Session-Id': sid })).status, 200);
    assert.equal((await post(srv.url, ping, { 'Mcp-Session-Id': 'f'.repeat(32) })).status, 404);
    const del = await fetch(srv.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
    assert.equal(del.status, 200);
    assert.equal((await post(srv.url, ping, { 'Mcp-Session-Id': sid })).status, 404);
  });

  test('protocol errors over HTTP', async () => {
    const sid = (await post(srv.url, INIT)).headers.get('mcp-session-id');
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    const h = { 'Mcp-Session-Id': sid };
    assert.equal((await post(srv.url, ping, { ...h, 'MCP-Protocol-Version': '1999-01-01' })).status, 400);
    assert.equal((await post(srv.url, ping)).status, 400, 'no session id');
    const bad = await fetch(srv.url, { method: 'POST', headers: { ...JSON_HEADERS, ...h }, body: '{not json' });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.code, -32700);
    const text = await fetch(srv.url, { method: 'POST', headers: { 'Content-Type': 'text/plain', ...h }, body: '{}' });
    assert.equal(text.status, 415);
    const get = await fetch(srv.url, { headers: { Accept: 'text/event-stream', ...h } });
    assert.equal(get.status, 405);
    assert.equal((await fetch(srv.url.replace('/mcp', '/other'), { method: 'POST', headers: JSON_HEADERS, body: '{}' })).status, 404);
    const huge = await fetch(srv.url, { method: 'POST', headers: { ...JSON_HEADERS, ...h }, body: 'x'.repeat(70 << 20) });
    assert.equal(huge.status, 413);
    const notification = await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
    assert.equal(notification.status, 202);
  });

});

describe('ending sessions', () => {
  test('DELETE ends the session and reaps its workers; other clients keep theirs', async () => {
    const srv = await startHttpServer({ args: ['--pool-size', '0'] });   // count workers one by one
    try {
      const other = await connectHttp(srv.url);
      await evalValue(other.client, '(defvar *kept* :yes)');
      const othersWorkers = childPids(srv.pid);
      const c = await connectHttp(srv.url);
      await createSession(c.client, 'extra');
      await evalValue(c.client, '(+ 1 1)');
      const mine = childPids(srv.pid).filter((p) => !othersWorkers.includes(p));
      assert.equal(mine.length, 2, `this client's workers: ${mine}`);
      await c.transport.terminateSession();
      assert.ok(await waitUntil(() => mine.every((p) => !isAlive(p))), 'workers reaped after DELETE');
      assert.ok(othersWorkers.every(isAlive), "the other client's worker lives");
      assert.equal(await evalValue(other.client, '*kept*'), ':YES');
      await c.close();
      await other.close();
    } finally {
      await srv.stop();
    }
  });
});

describe('security defaults', () => {
  test('foreign Host and Origin get 403; local ones are served', async () => {
    const srv = await startHttpServer();
    try {
      assert.equal(await postWithHost(srv.url, INIT, { Host: 'evil.example.com', Origin: 'http://evil.example.com' }), 403);
      assert.equal(await postWithHost(srv.url, INIT, { Origin: 'http://evil.example.com' }), 403);
      assert.equal(await postWithHost(srv.url, INIT, { Host: `evil.example.com:${srv.port}` }), 403);
      assert.equal(await postWithHost(srv.url, INIT, { Origin: `http://localhost:${srv.port}` }), 200);
      assert.equal(await postWithHost(srv.url, INIT, { Host: `localhost:${srv.port}` }), 200);
      assert.equal(await postWithHost(srv.url, INIT, { Host: `[::1]:${srv.port}`, Origin: 'https://127.0.0.1' }), 200);
    } finally {
      await srv.stop();
    }
  });

  test('--allow-origin admits a named Origin', async () => {
    const srv = await startHttpServer({ args: ['--allow-origin', 'https://tools.example.org'] });
    try {
      assert.equal((await post(srv.url, INIT, { Origin: 'https://tools.example.org' })).status, 200);
      assert.equal((await post(srv.url, INIT, { Origin: 'https://other.example.org' })).status, 403);
    } finally {
      await srv.stop();
    }
  });

  test('with --token, a missing or wrong bearer token gets 401', async () => {
    const srv = await startHttpServer({ args: ['--token', 's3cret-token'] });
    try {
      const none = await post(srv.url, INIT);
      assert.equal(none.status, 401);
      assert.match(none.headers.get('www-authenticate') || '', /Bearer/);
      assert.equal((await post(srv.url, INIT, { Authorization: 'Bearer wrong' })).status, 401);
      assert.equal((await post(srv.url, INIT, { Authorization: 'Bearer s3cret-token-and-more' })).status, 401);
      const c = await connectHttp(srv.url, { headers: { Authorization: 'Bearer s3cret-token' } });
      assert.equal(await evalValue(c.client, '(* 6 7)'), '42');
      await c.close();
    } finally {
      await srv.stop();
    }
  });

  test('the token can come from LISPMCP_TOKEN', async () => {
    const srv = await startHttpServer({ env: { LISPMCP_TOKEN: 'from-env' } });
    try {
      assert.equal((await post(srv.url, INIT)).status, 401);
      assert.equal((await post(srv.url, INIT, { Authorization: 'Bearer from-env' })).status, 200);
    } finally {
      await srv.stop();
    }
  });

  test('binding beyond loopback without a token is refused unless forced', async () => {
    const r = await runBinary(['--http', '0.0.0.0:0'], { env: { LISPMCP_TOKEN: '' } });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--token/);
  });
});

describe('a client that disappears', () => {
  test('mid-evaluation: its session expires and nothing is left behind', { timeout: 60_000 }, async () => {
    const srv = await startHttpServer({ args: ['--http-session-timeout', '1', '--pool-size', '0'] });
    try {
      const sid = (await post(srv.url, INIT)).headers.get('mcp-session-id');
      const h = { 'Mcp-Session-Id': sid };
      const abort = new AbortController();
      const call = fetch(srv.url, {
        method: 'POST', headers: { ...JSON_HEADERS, ...h }, signal: abort.signal,
        body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(sleep 2)' } } }),
      }).catch(() => null);
      assert.ok(await waitUntil(() => childPids(srv.pid).length === 1), 'a worker started');
      const workers = childPids(srv.pid);
      abort.abort();
      await call;
      assert.ok(await waitUntil(() => workers.every((p) => !isAlive(p)), 15_000), 'workers reaped after expiry');
      assert.equal((await post(srv.url, { jsonrpc: '2.0', id: 6, method: 'ping' }, h)).status, 404);
      const again = await connectHttp(srv.url);
      assert.equal(value(await evaluate(again.client, '(+ 2 3)')), '5', 'the server carries on');
      await again.close();
    } finally {
      await srv.stop();
    }
  });
});

describe('progress', () => {
  async function callWithProgress(client) {
    const seen = [];
    const r = await client.callTool(
      { name: 'evaluate-lisp', arguments: { code: '(progn (sleep 2.5) :finished)' } },
      undefined,
      { onprogress: (p) => seen.push(p), timeout: 60_000 },
    );
    return { r, seen };
  }

  test('a call with a progressToken hears from the server while it runs (HTTP, as SSE)', async () => {
    const srv = await startHttpServer();
    try {
      const c = await connectHttp(srv.url);
      const { r, seen } = await callWithProgress(c.client);
      assert.deepEqual(r.structuredContent.values, [':FINISHED']);
      assert.ok(seen.length >= 2, `progress notifications: ${JSON.stringify(seen)}`);
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress increases');
      // A call without a token is still answered with plain JSON.
      const sid = c.transport.sessionId;
      const plain = await post(srv.url, { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(+ 1 1)' } } },
        { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' });
      assert.match(plain.headers.get('content-type'), /application\/json/);
      assert.deepEqual((await plain.json()).result.structuredContent.values, ['2']);
      await c.close();
    } finally {
      await srv.stop();
    }
  });

  test('and over stdio', async () => {
    const srv = await startServer();
    try {
      const { r, seen } = await callWithProgress(srv.client);
      assert.deepEqual(r.structuredContent.values, [':FINISHED']);
      assert.ok(seen.length >= 2, `progress notifications: ${JSON.stringify(seen)}`);
    } finally {
      await srv.close();
    }
  });
});

describe('output as it is written, as log messages', () => {
  const CODE = '(dotimes (i 4) (format t "line ~a~%" i) (finish-output) (sleep 0.3))';

  async function collect(client) {
    const messages = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => messages.push(n.params));
    await client.setLoggingLevel('info');
    const r = await client.callTool({ name: 'evaluate-lisp', arguments: { code: CODE } });
    return { r, messages };
  }

  function check({ r, messages }) {
    assert.equal(r.structuredContent.stdout, 'line 0\nline 1\nline 2\nline 3\n', 'the result still has all of it');
    const streamed = messages.filter((m) => m.logger === 'stdout').map((m) => m.data).join('');
    assert.ok(streamed.startsWith('line 0\nline 1\n'), `streamed while running: ${JSON.stringify(messages)}`);
    assert.ok(messages.every((m) => m.level === 'info'));
  }

  test('over HTTP, on the call\'s SSE stream, once the client set a log level', async () => {
    const srv = await startHttpServer();
    try {
      const c = await connectHttp(srv.url);
      check(await collect(c.client));
      await c.close();
    } finally {
      await srv.stop();
    }
  });

  test('over stdio', async () => {
    const srv = await startServer();
    try {
      check(await collect(srv.client));
    } finally {
      await srv.close();
    }
  });

  test('nothing is streamed to a client that did not ask', async () => {
    const srv = await startServer();
    try {
      const messages = [];
      srv.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => messages.push(n.params));
      const r = await srv.client.callTool({ name: 'evaluate-lisp', arguments: { code: CODE } });
      assert.equal(r.structuredContent.stdout.split('\n').length, 5);
      assert.deepEqual(messages, []);
    } finally {
      await srv.close();
    }
  });
});
