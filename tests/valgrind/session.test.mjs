// valgrind: a scripted session that uses every tool, and every way an evaluation can end
// (value, Lisp error, timeout, kill after the grace period, death, cancellation, queued work
// dropped by a close, EOF with work running), must leave no leak and no memory error in the
// server. Runs the plain build (valgrind cannot run a sanitizer build).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RawServer, REPO_ROOT, sleep } from '../e2e/helpers.mjs';

test('valgrind: every tool and every ending, no leaks, no errors', { timeout: 300_000 }, async () => {
  const log = path.join(mkdtempSync(path.join(tmpdir(), 'lispmcp-vg-')), 'valgrind.log');
  const s = new RawServer({
    bin: path.join(REPO_ROOT, 'build/lispmcp'),
    args: ['--interrupt-grace', '1'],
    wrapper: ['valgrind', '--leak-check=full', '--show-leak-kinds=all', '--errors-for-leak-kinds=all',
              '--error-exitcode=9', `--log-file=${log}`],
  });
  await s.initialize();
  const call = (name, args) => s.callTool(name, args, { timeout: 120_000 });
  const ok = async (name, args) => {
    const r = await call(name, args);
    assert.ok(r.result, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r).slice(0, 500)}`);
    return r.result;
  };

  await ok('evaluate-lisp', { code: '(defun square (x) (* x x)) (square 7)', 'capture-time': true });
  await ok('evaluate-lisp', { code: '(progn (princ "o") (warn "w") (/ 1 0))' });
  await ok('evaluate-lisp', { code: '(+ 1 2' });
  await ok('time-execution', { code: '(loop repeat 1000 collect 1)' });
  await ok('evaluate-lisp', { code: '(loop)', 'timeout-seconds': 0.5 });
  await ok('evaluate-lisp', { code: '(sb-sys:without-interrupts (loop))', 'timeout-seconds': 0.5 });
  await ok('evaluate-lisp', { code: '(sb-ext:exit :abort t)' });
  await ok('evaluate-lisp', { code: '(square 3)' });
  const created = await ok('create-session', { name: 'vg' });
  const id = created.structuredContent.session;
  await ok('list-sessions', {});
  await ok('evaluate-lisp', { code: '(make-string 2000000 :initial-element #\\a)', session: id });
  await ok('reset-session', { session: id });
  // A running evaluation cancelled, and queued ones dropped by close-session.
  const cancelId = s.newId();
  s.send({ jsonrpc: '2.0', id: cancelId, method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(sleep 30)', session: id } } });
  await sleep(300);
  s.notify('notifications/cancelled', { requestId: cancelId, reason: 'valgrind' });
  for (let i = 0; i < 3; i++)
    s.send({ jsonrpc: '2.0', id: s.newId(), method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(sleep 5)', session: id } } });
  await sleep(200);
  await ok('close-session', { session: id });
  await ok('evaluate-lisp', { code: '1', session: id });   // unknown now: an error result
  s.sendRaw('garbage \u0000 not json\n');
  s.sendRaw('{"jsonrpc":"2.0","id":77,"method":"nope"}\n');
  // EOF while an evaluation is running.
  s.send({ jsonrpc: '2.0', id: s.newId(), method: 'tools/call', params: { name: 'evaluate-lisp', arguments: { code: '(sleep 30)' } } });
  await sleep(300);
  const exit = await s.close({ timeout: 120_000 });
  const report = readFileSync(log, 'utf8');
  assert.deepEqual(exit, { code: 0, signal: null }, `valgrind found problems:\n${report.slice(-4000)}`);
  assert.match(report, /All heap blocks were freed -- no leaks are possible/, report.slice(-3000));
  assert.match(report, /ERROR SUMMARY: 0 errors/, report.slice(-3000));
});
