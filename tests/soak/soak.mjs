// Soak test (make soak; not part of make check): random hostile programs in many sessions for a
// set time, through the official MCP SDK client. At the end: the server answers, every session
// whose image was never lost still has every definition it made, no process leaked once the
// sessions are closed, and the server's memory is back near where it started.
//
//   SOAK_SECONDS=120 SOAK_SESSIONS=8 SEED=1234 node tests/soak/soak.mjs
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  startServer, evaluate, createSession, closeSession, childPids, isAlive, sleep, makeRng, value,
} from '../e2e/helpers.mjs';

const seconds = Number(process.env.SOAK_SECONDS || 120);
const sessions = Number(process.env.SOAK_SESSIONS || 8);
const rng = makeRng('soak');

function rssKb(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return m ? Number(m[1]) : 0;
}

function descendants(pid) {
  const out = [];
  for (const c of childPids(pid)) out.push(c, ...descendants(c));
  return out;
}

// Each program: [code, options]. Hostile ones may lose the image; the checks allow for that.
const hostile = [
  ['(loop)', { timeoutSeconds: 0.5 }],
  ['(sb-sys:without-interrupts (loop))', { timeoutSeconds: 0.3 }],
  ['(sb-ext:exit :code 3)', {}],
  ['(sb-ext:exit :abort t)', {}],
  ['(defun soak-deep (n) (1+ (soak-deep n))) (soak-deep 1)', {}],
  ['(length (make-array (expt 10 10)))', {}],
  ['(loop repeat 200000 do (princ "spam"))', {}],
  ['(loop (princ "flood"))', { timeoutSeconds: 0.5 }],
  ['(sb-thread:make-thread (lambda () (loop repeat 20 do (print :tick) (finish-output) (sleep 0.05))))', {}],
  ['(progn (sb-ext:run-program "/bin/sleep" \'("300") :wait nil) t)', {}],
  ['(sb-ext:run-program "/bin/sh" \'("-c" "echo to-console; echo err >&2") :output nil :error nil)', {}],
  ['(read-line)', {}],
  ['(error "soak ~A" 1)', {}],
  ['(+ 1 2', {}],
  ['(make-string 3000000 :initial-element #\\z)', {}],
  ['(let ((l (list 1))) (setf (cdr l) l) l)', {}],
  ['(setf *print-base* 16)', {}],
  ['(sleep 0.2)', {}],
];

async function main() {
  console.log(`soak: ${seconds} s, ${sessions} sessions`);
  const srv = await startServer({ args: ['--interrupt-grace', '1', '--max-output-bytes', '100000'] });
  const ids = [];
  for (let i = 0; i < sessions; i++) ids.push(await createSession(srv, `soak${i}`));
  await sleep(500);
  const rssStart = rssKb(srv.pid);
  const expected = new Map(ids.map((id) => [id, new Map()])); // name -> value, since last loss
  const stats = { calls: 0, lost: 0, errors: 0 };
  const deadline = Date.now() + seconds * 1000;

  async function worker(id, k) {
    let n = 0;
    while (Date.now() < deadline) {
      let code;
      let opts = { session: id, requestTimeout: 120_000 };
      let def = null;
      if (rng.next() < 0.5) {
        def = `soak-${k}-${n++}`;
        const v = rng.int(0, 999999);
        code = `(progn (setf *print-base* 10) (defun ${def} () ${v}) (${def}))`;
        def = [def, String(v)];
      } else {
        const [c, o] = rng.pick(hostile);
        code = c;
        opts = { ...opts, ...o };
      }
      const r = await evaluate(srv, code, opts);
      stats.calls++;
      const sc = r.structuredContent || {};
      if (sc.notice || sc.error?.['session-state'] === 'lost') {
        stats.lost++;
        expected.get(id).clear();
      }
      if (r.isError) stats.errors++;
      else if (def && !sc.notice) {
        assert.equal(value(r), def[1], `${def[0]} returned its value`);
        expected.get(id).set(def[0], def[1]);
      } else if (def) {
        expected.get(id).set(def[0], def[1]);
      }
    }
  }
  await Promise.all(ids.map((id, k) => worker(id, k)));

  // Every definition made since a session's last loss is still there.
  let checked = 0;
  for (const id of ids) {
    const r = await evaluate(srv, '(setf *print-base* 10)', { session: id });
    if (r.structuredContent?.notice) expected.get(id).clear();
    for (const [name, v] of expected.get(id)) {
      const got = await evaluate(srv, `(${name})`, { session: id });
      assert.ok(!got.isError, `${name} survived in ${id}: ${JSON.stringify(got.structuredContent)}`);
      assert.equal(value(got), v);
      checked++;
    }
  }
  const answer = await evaluate(srv, '(+ 20 22)');
  assert.equal(value(answer), '42', 'the server answers');

  for (const id of ids) await closeSession(srv, id);
  await closeSession(srv, 'default');
  await sleep(1000);
  // Only the pool's idle images may remain: direct children with nothing under them.
  const left = descendants(srv.pid).filter(isAlive);
  const pooled = childPids(srv.pid).filter((p) => isAlive(p) && descendants(p).length === 0);
  assert.ok(pooled.length <= 2, `more idle images than the pool holds: ${pooled}`);
  assert.deepEqual(left.filter((p) => !pooled.includes(p)), [], `processes left after closing every session: ${left}`);
  const rssEnd = rssKb(srv.pid);
  console.log(
    `soak: ${stats.calls} calls, ${stats.errors} error results, ${stats.lost} images lost, ` +
      `${checked} definitions verified; server RSS ${rssStart} kB -> ${rssEnd} kB`,
  );
  assert.ok(rssEnd < rssStart + 32 * 1024, `server memory grew from ${rssStart} kB to ${rssEnd} kB`);
  await srv.close();
  console.log('1 passed, 0 failed');
}

main().catch((e) => {
  console.error(e);
  console.log('0 passed, 1 failed');
  process.exit(1);
});
