// A long session (seed state-persistence, edge case "very long sessions (100+ evaluations)"):
// 150 evaluate-lisp calls in one session that incrementally define and use things — a counter,
// a hash table, a log, functions and macros redefined several times, functions that call the
// latest version of others, let-shadowing, mutual recursion, package switching, deliberate
// errors — with every result checked against a model kept here. The order is random (seeded).

import { test as nodeTest, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, evaluate, createSession, listSessions, describeResult, makeRng, withStderr } from './helpers.mjs';

let srv;
const test = withStderr(nodeTest, () => srv);
const rng = makeRng('long-session.test.mjs');
const TOTAL = 150;

before(async () => {
  srv = await startServer();
});
after(async () => srv?.close());

test(`${TOTAL} evaluations in one session, every result checked`, { timeout: 180_000 }, async () => {
  const S = await createSession(srv, 'long');
  const m = {
    counter: 0,
    table: new Map(),
    log: 0,
    fK: 0, // (f x) = x + fK
    mK: 0, // (m x) = (list x mK)
    gs: [], // [{name, arg}] : (name) = (f arg)
    pkg: 'COMMON-LISP-USER',
    mutual: false,
  };
  let n = 0;
  const history = [];

  async function step(code, { values, error, pkg } = {}) {
    n++;
    const r = await evaluate(srv, code, { session: S });
    history.push(code);
    const where = `[SEED=${rng.seed}] evaluation #${n}: ${code}`;
    if (error) {
      assert.equal(r.isError, true, `${where} should fail:\n${describeResult(r)}`);
      assert.equal(r.structuredContent?.error?.type, error, where);
      assert.equal(r.structuredContent.error['session-state'], 'kept', where);
    } else {
      assert.ok(!r.isError, `${where} failed:\n${describeResult(r)}`);
      if (values !== undefined) assert.deepEqual(r.structuredContent.values, values, where);
    }
    assert.equal(r.structuredContent.package, pkg ?? m.pkg, `${where}: package`);
    assert.equal(r.structuredContent.session, S, `${where}: session`);
    return r;
  }

  // set-up (counts toward the total)
  await step('(defvar *counter* 0)', { values: ['*COUNTER*'] });
  await step("(defvar *table* (make-hash-table :test 'equal))", { values: ['*TABLE*'] });
  await step('(defvar *log* nil)', { values: ['*LOG*'] });
  await step('(defun f (x) (+ x 0))', { values: ['F'] });
  await step('(defmacro m (x) `(list ,x 0))', { values: ['M'] });

  const actions = {
    incf: async () => {
      m.counter++;
      await step('(incf *counter*)', { values: [String(m.counter)] });
    },
    incfBy: async () => {
      const k = rng.int(-50, 50);
      m.counter += k;
      await step(`(incf *counter* ${k})`, { values: [String(m.counter)] });
    },
    readCounter: async () => step('*counter*', { values: [String(m.counter)] }),
    shadow: async () => {
      const k = rng.int(100, 999);
      await step(`(let ((*counter* ${k})) (incf *counter*) *counter*)`, { values: [String(k + 1)] });
    },
    put: async () => {
      const key = `key-${rng.int(0, 40)}`;
      const v = rng.int(0, 1e6);
      m.table.set(key, v);
      await step(`(setf (gethash "${key}" *table*) ${v})`, { values: [String(v)] });
    },
    get: async () => {
      if (m.table.size === 0) return actions.put();
      const keys = [...m.table.keys()];
      const key = rng.pick(keys);
      await step(`(gethash "${key}" *table*)`, { values: [String(m.table.get(key)), 'T'] });
    },
    getMissing: async () => step('(gethash "no-such-key" *table*)', { values: ['NIL', 'NIL'] }),
    count: async () => step('(hash-table-count *table*)', { values: [String(m.table.size)] }),
    sumTable: async () => {
      const sum = [...m.table.values()].reduce((a, b) => a + b, 0);
      await step('(loop for v being the hash-values of *table* sum v)', { values: [String(sum)] });
    },
    log: async () => {
      m.log++;
      await step(`(progn (push ${n} *log*) (length *log*))`, { values: [String(m.log)] });
    },
    redefineF: async () => {
      m.fK = rng.int(-1000, 1000);
      await step(`(defun f (x) (+ x ${m.fK}))`, { values: ['F'] });
    },
    callF: async () => {
      const x = rng.int(-100, 100);
      await step(`(f ${x})`, { values: [String(x + m.fK)] });
    },
    redefineM: async () => {
      m.mK = rng.int(0, 99);
      await step(`(defmacro m (x) \`(list ,x ${m.mK}))`, { values: ['M'] });
    },
    useM: async () => {
      const x = rng.int(0, 9);
      await step(`(m ${x})`, { values: [`(${x} ${m.mK})`] });
    },
    defineG: async () => {
      const name = `g-${m.gs.length}`;
      const arg = rng.int(0, 100);
      m.gs.push({ name, arg });
      await step(`(defun ${name} () (f ${arg}))`, { values: [name.toUpperCase()] });
    },
    callG: async () => {
      if (m.gs.length === 0) return actions.defineG();
      const g = rng.pick(m.gs);
      // late binding: g calls the current f
      await step(`(${g.name})`, { values: [String(g.arg + m.fK)] });
    },
    combined: async () => {
      const expect = m.counter + m.table.size + m.fK + m.log;
      await step('(+ *counter* (hash-table-count *table*) (f 0) (length *log*))', { values: [String(expect)] });
    },
    mutual: async () => {
      if (!m.mutual) {
        // first half refers to a function that does not exist yet
        m.mutual = true;
        await step('(defun my-even-p (n) (if (zerop n) t (my-odd-p (1- n))))', { values: ['MY-EVEN-P'] });
        await step('(defun my-odd-p (n) (if (zerop n) nil (my-even-p (1- n))))', { values: ['MY-ODD-P'] });
        return;
      }
      const k = rng.int(0, 200);
      await step(`(list (my-even-p ${k}) (my-odd-p ${k}))`, { values: [k % 2 === 0 ? '(T NIL)' : '(NIL T)'] });
    },
    error: async () => {
      await step(`(progn (incf *counter* 1000000) (error "deliberate ~a" ${n}))`, { error: 'SIMPLE-ERROR' });
      m.counter += 1000000; // side effects before the error stay
    },
    packages: async () => {
      await step('(defpackage :long-pkg (:use :cl))', { values: ['#<PACKAGE "LONG-PKG">'] });
      m.pkg = 'LONG-PKG';
      await step('(in-package :long-pkg)', { pkg: 'LONG-PKG' });
      const x = rng.int(0, 9);
      await step(`(list (package-name *package*) (cl-user::f ${x}) cl-user::*counter*)`, {
        values: [`("LONG-PKG" ${x + m.fK} ${m.counter})`],
      });
      m.pkg = 'COMMON-LISP-USER';
      await step('(in-package :cl-user)', { pkg: 'COMMON-LISP-USER' });
    },
  };
  const weighted = [
    ...Array(4).fill('incf'),
    ...Array(2).fill('incfBy'),
    'readCounter',
    'shadow',
    ...Array(3).fill('put'),
    ...Array(2).fill('get'),
    'getMissing',
    'count',
    'sumTable',
    'log',
    ...Array(2).fill('redefineF'),
    ...Array(2).fill('callF'),
    'redefineM',
    'useM',
    'defineG',
    ...Array(2).fill('callG'),
    'combined',
    'mutual',
    'error',
    'packages',
  ];

  while (n < TOTAL - 5) await actions[rng.pick(weighted)]();
  // fill up with reads, then a final check of everything
  while (n < TOTAL - 1) await actions.readCounter();
  await actions.combined();
  assert.equal(n, TOTAL);

  // the session counted every evaluation
  const sessions = await listSessions(srv);
  const me = sessions.find((s) => s.session === S);
  assert.ok(me, `session ${S} missing from list-sessions: ${JSON.stringify(sessions)}`);
  assert.equal(me.evaluations, TOTAL, `evaluations count: ${JSON.stringify(me)}`);
  assert.equal(me.alive, true);
  assert.equal(me.package, 'COMMON-LISP-USER');
});
