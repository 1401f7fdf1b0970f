// Shared helpers for the lispmcp end-to-end tests.
//
// Two ways to talk to the server:
//   * startServer()  -> the official MCP TypeScript SDK (Client + StdioClientTransport)
//   * new RawServer() -> child_process + newline-delimited JSON-RPC by hand, for protocol tests
//
// The binary is process.env.LISPMCP_BIN, or build/lispmcp, resolved from the repository root.

import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

export { McpError };

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.resolve(REPO_ROOT, process.env.LISPMCP_BIN || 'build/lispmcp');

export const TOOL_NAMES = [
  'evaluate-lisp',
  'time-execution',
  'create-session',
  'list-sessions',
  'reset-session',
  'close-session',
];

// Generous per-request timeout for the SDK (its default is 60 s).
const REQUEST_TIMEOUT_MS = 120_000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll predicate every 50 ms until it holds or ms pass; resolves to its last value. */
export async function waitUntil(predicate, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (predicate()) return true;
    await sleep(50);
  }
  return predicate();
}

/** Resolve to the promise's value, or to `fallback` after ms (the timer is cleared either way). */
export function within(promise, ms, fallback = null) {
  let timer;
  return Promise.race([promise, new Promise((r) => (timer = setTimeout(() => r(fallback), ms)))]).finally(() => clearTimeout(timer));
}

function tail(s, n = 4000) {
  return s.length > n ? '…' + s.slice(-n) : s;
}

// ---------------------------------------------------------------------------
// SDK-based server handle
// ---------------------------------------------------------------------------

/**
 * Start build/lispmcp with the SDK's StdioClientTransport, connect a Client and list the tools
 * (which also makes the SDK validate every structuredContent against the tool's outputSchema).
 * Returns { client, transport, pid, tools, stderr(), stderrTail(), errors, close() }.
 */
export async function startServer({ args = [], env = {}, listTools = true } = {}) {
  const transport = new StdioClientTransport({
    command: BIN,
    args,
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stderr: 'pipe',
  });
  let stderrText = '';
  transport.stderr.on('data', (chunk) => {
    stderrText += chunk.toString('utf8');
    if (stderrText.length > 1_000_000) stderrText = stderrText.slice(-500_000);
  });
  const client = new Client({ name: 'lispmcp-e2e', version: '1.0.0' }, { capabilities: {} });
  const errors = [];
  client.onerror = (e) => errors.push(e);
  let closed = false;
  const srv = {
    client,
    transport,
    errors,
    tools: null,
    pid: null,
    args,
    stderr: () => stderrText,
    stderrTail: (n) => tail(stderrText, n),
    async close() {
      if (closed) return;
      closed = true;
      try {
        await client.close();
      } catch {
        /* ignore */
      }
    },
  };
  try {
    await client.connect(transport, { timeout: 30_000 });
  } catch (e) {
    e.message += `\n--- server stderr ---\n${tail(stderrText)}`;
    await srv.close();
    throw e;
  }
  srv.pid = transport.pid;
  if (listTools) srv.tools = (await client.listTools()).tools;
  return srv;
}

function clientOf(c) {
  return c && c.client instanceof Client ? c.client : c;
}

/** Call any tool; returns the CallToolResult (throws McpError on JSON-RPC errors). */
export function callTool(c, name, args = {}, { signal, requestTimeout } = {}) {
  return clientOf(c).callTool({ name, arguments: args }, undefined, {
    signal,
    timeout: requestTimeout ?? REQUEST_TIMEOUT_MS,
  });
}

/** evaluate-lisp. opts: session, package, timeoutSeconds, captureTime, signal, requestTimeout */
export function evaluate(c, code, opts = {}) {
  const args = { code };
  if (opts.session !== undefined) args.session = opts.session;
  if (opts.package !== undefined) args.package = opts.package;
  if (opts.timeoutSeconds !== undefined) args['timeout-seconds'] = opts.timeoutSeconds;
  if (opts.captureTime !== undefined) args['capture-time'] = opts.captureTime;
  return callTool(c, 'evaluate-lisp', args, opts);
}

/** time-execution. opts: session, package */
export function timeExecution(c, code, opts = {}) {
  const args = { code };
  if (opts.session !== undefined) args.session = opts.session;
  if (opts.package !== undefined) args.package = opts.package;
  return callTool(c, 'time-execution', args, opts);
}

/** create-session; returns structuredContent.session */
export async function createSession(c, name) {
  const r = await callTool(c, 'create-session', name === undefined ? {} : { name });
  assert.ok(!r.isError, `create-session failed: ${JSON.stringify(r)}`);
  const id = r.structuredContent?.session;
  assert.equal(typeof id, 'string', `create-session returned no session id: ${JSON.stringify(r)}`);
  assert.ok(id.length > 0);
  return id;
}

export async function listSessions(c) {
  const r = await callTool(c, 'list-sessions', {});
  assert.ok(!r.isError, `list-sessions failed: ${JSON.stringify(r)}`);
  assert.ok(Array.isArray(r.structuredContent?.sessions), JSON.stringify(r));
  return r.structuredContent.sessions;
}

export async function closeSession(c, session) {
  return callTool(c, 'close-session', { session });
}

/** The last printed value of a result (undefined when there are none). */
export function value(result) {
  const v = result?.structuredContent?.values;
  return Array.isArray(v) && v.length ? v[v.length - 1] : undefined;
}

export function text(result) {
  return (result?.content || [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

export function describeResult(result) {
  const sc = result?.structuredContent;
  return JSON.stringify(sc ?? result, null, 1).slice(0, 3000) + (sc ? '' : '') + `\ntext: ${text(result).slice(0, 1500)}`;
}

/** Assert that a tool result is a success (not isError), with a helpful message. */
export function assertOk(result, what = '') {
  assert.ok(result && typeof result === 'object', `no result for ${what}`);
  assert.ok(!result.isError, `expected success for ${what}, got error:\n${describeResult(result)}`);
  assert.ok(result.structuredContent && typeof result.structuredContent === 'object', `no structuredContent for ${what}: ${describeResult(result)}`);
  return result;
}

/** Assert that a tool result is an error and return structuredContent.error. */
export function assertToolError(result, what = '') {
  assert.ok(result?.isError === true, `expected isError for ${what}, got:\n${describeResult(result)}`);
  const err = result.structuredContent?.error;
  assert.ok(err && typeof err === 'object', `isError result without structuredContent.error for ${what}:\n${describeResult(result)}`);
  return err;
}

/** evaluate, assert success, return the result. */
export async function evalOk(c, code, opts) {
  return assertOk(await evaluate(c, code, opts), code);
}

/** evaluate, assert success, return the last printed value. */
export async function evalValue(c, code, opts) {
  return value(await evalOk(c, code, opts));
}

/** evaluate, assert it is an error, return structuredContent.error. */
export async function evalError(c, code, opts) {
  return assertToolError(await evaluate(c, code, opts), code);
}

/**
 * The SDK raises McpError(-32602) itself when a result's structuredContent does not match the
 * tool's outputSchema; that is a server bug, not the server's -32602, so fail loudly.
 */
export function assertNotSchemaViolation(e) {
  assert.ok(
    !/Structured content does not match the tool's output schema|Failed to validate structured content|has an output schema but did not return structured content/.test(e.message),
    `the server returned a result that violates its own outputSchema (the SDK client rejected it): ${e.message}`,
  );
}

/**
 * Expect a call to fail with a message naming `word` (case-insensitive): either a JSON-RPC
 * -32602 error or a result with isError. `what` says what kind of failure, for messages.
 */
async function expectErrorNaming(promise, word, what) {
  let r;
  try {
    r = await promise;
  } catch (e) {
    assert.ok(e instanceof McpError, `expected McpError, got ${e}`);
    assertNotSchemaViolation(e);
    assert.equal(e.code, -32602, `${what}: expected -32602 (or an isError result), got ${e.code}: ${e.message}`);
    assert.ok(e.message.toLowerCase().includes(word.toLowerCase()), `${what}: message should name ${word}: ${e.message}`);
    return;
  }
  assert.equal(r.isError, true, `${what}: expected an error naming ${word}, got:\n${describeResult(r)}`);
  const all = text(r) + JSON.stringify(r.structuredContent ?? {});
  assert.ok(all.toLowerCase().includes(word.toLowerCase()), `${what}: error should name ${word}: ${describeResult(r)}`);
}

/** An unknown session id: an error naming the id. */
export function expectUnknownSession(promise, id) {
  return expectErrorNaming(promise, id, 'unknown session');
}

/** Protocol misuse: an error naming `word` (the argument, the tool...). */
export function expectParamError(promise, word) {
  return expectErrorNaming(promise, word, 'bad params');
}

/** The Lisp prin1 representation of a JS string (no escapes but \ and "). */
export function lispString(s) {
  return '"' + s.replace(/[\\"]/g, (m) => '\\' + m) + '"';
}

export function mean(xs) {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function stddev(xs) {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / xs.length);
}

// ---------------------------------------------------------------------------
// A test() wrapper that prints the server's stderr tail when a test fails
// ---------------------------------------------------------------------------

/**
 * Wrap node:test's test() so that a failing test prints the stderr tail of the given servers.
 * getServers: () => server handle | RawServer | array of them.
 */
export function withStderr(testFn, getServers) {
  return (name, opts, fn) => {
    if (typeof opts === 'function') {
      fn = opts;
      opts = {};
    }
    return testFn(name, opts, async (t) => {
      try {
        return await fn(t);
      } catch (e) {
        let servers = [];
        try {
          servers = [].concat(getServers()).filter(Boolean);
        } catch {
          /* ignore */
        }
        for (const s of servers) {
          const st = typeof s.stderrTail === 'function' ? s.stderrTail(3000) : '';
          if (st) console.error(`--- lispmcp stderr (pid ${s.pid}) for failing test "${name}" ---\n${st}\n--- end stderr ---`);
        }
        throw e;
      }
    });
  };
}

// ---------------------------------------------------------------------------
// Seeded PRNG
// ---------------------------------------------------------------------------

export function mulberry32(a) {
  return function () {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A seeded random generator. The seed comes from env SEED, else it is random; it is printed so a
 * failure can be reproduced with SEED=<n>.
 */
export function makeRng(label = 'rng') {
  const seed = process.env.SEED !== undefined ? Number(process.env.SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
  console.log(`# ${label}: SEED=${seed} (re-run with SEED=${seed} to reproduce)`);
  const next = mulberry32(seed);
  const rng = {
    seed,
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)), // inclusive
    pick: (arr) => arr[Math.floor(next() * arr.length)],
    shuffle(arr) {
      const a = arr.slice();
      for (let i = a.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [a[i], a[j]] = [a[j], a[i]];
      }
      return a;
    },
    word(n = 6) {
      const cs = 'abcdefghijklmnopqrstuvwxyz';
      let s = '';
      for (let i = 0; i < n; i++) s += cs[Math.floor(next() * cs.length)];
      return s;
    },
    bytes(n) {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = Math.floor(next() * 256);
      return b;
    },
  };
  return rng;
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/** PIDs of the direct children of `pid` (scans /proc, like pgrep -P). */
export function childPids(pid) {
  const out = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[1]) === pid) out.push(Number(d));
    } catch {
      /* process went away */
    }
  }
  return out;
}

/** Same via pgrep -P (as the issue suggests); [] when none. */
export function pgrepChildren(pid) {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

export function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** True when a process exists (zombies excluded). */
export function isAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Like isAlive but strictly as the issue says: process.kill(pid, 0) does not throw. */
export function killZeroSucceeds(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------
// Raw newline-delimited JSON-RPC over the binary's stdio
// ---------------------------------------------------------------------------

export class RawServer {
  /** wrapper: a command to run the binary under, e.g. ['valgrind', '--leak-check=full']. */
  constructor({ args = [], env = {}, wrapper = null, bin = BIN } = {}) {
    this.args = args;
    const [command, ...argv] = wrapper ? [...wrapper, bin, ...args] : [bin, ...args];
    this.proc = spawn(command, argv, {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.pid = this.proc.pid;
    this.messages = []; // every parsed message, in order
    this.badLines = []; // stdout lines that are not JSON objects (protocol corruption)
    this.stderrText = '';
    this.stdoutBytes = 0;
    this._buf = Buffer.alloc(0);
    this._waiters = [];
    this._nextId = 1000;
    this.exitInfo = null;
    this.exited = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
        this._wake();
      });
    });
    this.spawnError = null;
    this.proc.on('error', (e) => {
      this.spawnError = e;
      this._wake();
    });
    this.proc.stdin.on('error', () => {
      /* EPIPE after exit: ignore */
    });
    this.proc.stderr.on('data', (c) => {
      this.stderrText += c.toString('utf8');
      if (this.stderrText.length > 1_000_000) this.stderrText = this.stderrText.slice(-500_000);
    });
    this.proc.stdout.on('data', (c) => this._onData(c));
  }

  stderrTail(n) {
    return tail(this.stderrText, n);
  }

  _onData(chunk) {
    this.stdoutBytes += chunk.length;
    this._buf = Buffer.concat([this._buf, chunk]);
    let i;
    while ((i = this._buf.indexOf(0x0a)) !== -1) {
      const line = this._buf.subarray(0, i).toString('utf8').replace(/\r$/, '');
      this._buf = this._buf.subarray(i + 1);
      if (line === '') {
        this.badLines.push(line);
        continue;
      }
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        this.badLines.push(line.slice(0, 500));
        continue;
      }
      if (!msg || typeof msg !== 'object' || Array.isArray(msg) || msg.jsonrpc !== '2.0') {
        this.badLines.push(line.slice(0, 500));
      }
      this.messages.push(msg);
    }
    this._wake();
  }

  _wake() {
    const ws = this._waiters;
    this._waiters = [];
    for (const w of ws) w();
  }

  _changed() {
    return new Promise((resolve) => this._waiters.push(resolve));
  }

  /** Write a raw line (string or Buffer); a newline is appended unless present. */
  sendRaw(data) {
    let b = Buffer.isBuffer(data) ? data : Buffer.from(data, 'utf8');
    if (b.length === 0 || b[b.length - 1] !== 0x0a) b = Buffer.concat([b, Buffer.from('\n')]);
    return this.writeBytes(b);
  }

  /** Write bytes exactly as given (no newline added). */
  writeBytes(b) {
    // resolves once the chunk is handed to the pipe, or on error (e.g. EPIPE after the server exited)
    return new Promise((resolve) => {
      if (this.exitInfo || this.proc.stdin.destroyed) return resolve();
      this.proc.stdin.write(b, () => resolve());
    });
  }

  send(obj) {
    return this.sendRaw(JSON.stringify(obj));
  }

  newId() {
    return this._nextId++;
  }

  /** Wait until some message (from index `from`) satisfies pred; resolves to it. */
  async waitFor(pred, { timeout = 30_000, from = 0, what = 'message' } = {}) {
    const deadline = Date.now() + timeout;
    for (;;) {
      for (let i = from; i < this.messages.length; i++) if (pred(this.messages[i])) return this.messages[i];
      if (this.spawnError) throw this.spawnError;
      if (this.exitInfo) throw new Error(`server exited (${JSON.stringify(this.exitInfo)}) while waiting for ${what}\nstderr: ${this.stderrTail(2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${timeout} ms waiting for ${what}\nstderr: ${this.stderrTail(2000)}`);
      let timer;
      await Promise.race([this._changed(), new Promise((r) => (timer = setTimeout(r, Math.min(left, 1000))))]);
      clearTimeout(timer);
    }
  }

  /** The response (result or error) to request id. */
  response(id, opts = {}) {
    return this.waitFor((m) => m && !('method' in m) && 'id' in m && m.id === id && ('result' in m || 'error' in m), {
      what: `response to id ${JSON.stringify(id)}`,
      ...opts,
    });
  }

  /** Send a request and wait for its response. */
  async request(method, params, { id, timeout } = {}) {
    if (id === undefined) id = this.newId();
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    const from = this.messages.length;
    await this.send(msg);
    return this.response(id, { timeout, from });
  }

  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    return this.send(msg);
  }

  async initialize(protocolVersion = '2025-11-25') {
    const r = await this.request('initialize', {
      protocolVersion,
      capabilities: {},
      clientInfo: { name: 'lispmcp-e2e-raw', version: '1.0.0' },
    });
    assert.ok(r.result, `initialize failed: ${JSON.stringify(r)}\nstderr: ${this.stderrTail(2000)}`);
    await this.notify('notifications/initialized');
    return r;
  }

  /** tools/call; resolves to the whole JSON-RPC response. */
  callTool(name, args, opts) {
    return this.request('tools/call', { name, arguments: args }, opts);
  }

  /**
   * Send a ping and wait for its answer; returns every message that arrived since index `from`
   * (default: since the previous sync), excluding the ping's response. Because the server
   * handles lines in order, the messages returned are the reactions to what was sent before.
   */
  async sync({ timeout = 30_000 } = {}) {
    const from = this._syncMark ?? 0;
    const id = `sync-${this.newId()}`;
    await this.send({ jsonrpc: '2.0', id, method: 'ping' });
    const resp = await this.response(id, { timeout, from });
    const idx = this.messages.indexOf(resp);
    const between = this.messages.slice(from, idx).concat(this.messages.slice(idx + 1));
    this._syncMark = this.messages.length;
    return { between, pong: resp };
  }

  markSync() {
    this._syncMark = this.messages.length;
  }

  /** Close stdin (EOF) and wait for exit; kill after `timeout` ms. */
  async close({ timeout = 10_000 } = {}) {
    if (this.exitInfo) return this.exitInfo;
    try {
      this.proc.stdin.end();
    } catch {
      /* ignore */
    }
    const t = setTimeout(() => {
      try {
        this.proc.kill('SIGKILL');
      } catch {
        /* ignore */
      }
    }, timeout);
    const info = await this.exited;
    clearTimeout(t);
    return info;
  }

  kill() {
    try {
      this.proc.kill('SIGKILL');
    } catch {
      /* ignore */
    }
  }
}

/** Run the binary with args to completion (for --help, bad options...). */
export function runBinary(args, { timeout = 10_000, input = '', env = {} } = {}) {
  return new Promise((resolve) => {
    const p = spawn(BIN, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c) => (stdout += c));
    p.stderr.on('data', (c) => (stderr += c));
    p.stdin.on('error', () => {});
    p.stdin.end(input);
    const t = setTimeout(() => p.kill('SIGKILL'), timeout);
    // 'close', not 'exit': only then has everything the process wrote been read.
    p.on('close', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal, stdout, stderr });
    });
    p.on('error', (e) => {
      clearTimeout(t);
      resolve({ code: null, signal: null, stdout, stderr: String(e) });
    });
  });
}

// ---------------------------------------------------------------------------
// Streamable HTTP
// ---------------------------------------------------------------------------

/**
 * Start `lispmcp --http 127.0.0.1:0 ...args` and wait for the URL it prints.
 * Returns { url, port, pid, proc, stderr(), stop() }; stop() sends SIGTERM and resolves with
 * the exit { code, signal }.
 */
export async function startHttpServer({ args = [], env = {}, host = '127.0.0.1' } = {}) {
  const proc = spawn(BIN, ['--http', `${host}:0`, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, LISPMCP_TOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderrText = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL within 15 s:\n${stderrText}`)), 15_000);
    proc.stderr.on('data', (c) => {
      stderrText += c.toString('utf8');
      const m = stderrText.match(/listening on (http:\/\/\S+\/mcp)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exited.then((info) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${JSON.stringify(info)} before listening:\n${stderrText}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    pid: proc.pid,
    proc,
    exited,
    stderr: () => stderrText,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}

/** An SDK client connected over Streamable HTTP (headers: e.g. Authorization). */
export async function connectHttp(url, { headers = {} } = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'lispmcp-e2e-http', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  await client.listTools();   // the SDK then checks every result against the output schemas
  return { client, transport, close: () => client.close().catch(() => {}) };
}
