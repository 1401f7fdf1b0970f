// Property test from the seeds' "Generator" sections: random Common Lisp definitions
// (defun, defvar, defparameter, defmacro, defclass, defstruct, defgeneric/defmethod) with unique
// names. In session A every one is present and computes what it should; in session B (made with
// create-session) none of them exists. The seed is printed; SEED=<n> reproduces a run.

import { test as nodeTest, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, evaluate, createSession, assertOk, value, makeRng, lispString, withStderr, describeResult } from './helpers.mjs';

let srv;
const test = withStderr(nodeTest, () => srv);
const rng = makeRng('generator.test.mjs');
const N = 40;

before(async () => {
  srv = await startServer();
});
after(async () => srv?.close());

// Strings with characters that need escaping in Lisp and in JSON.
function randomString() {
  const alphabet = 'abcXYZ 019-_.,;:!?()[]{}<>#|\'`"\\';
  let s = '';
  for (let i = 0, n = rng.int(0, 12); i < n; i++) s += rng.pick(alphabet.split(''));
  return s;
}

// Each generator returns { kind, name, define: [code...], checks: [{code, expect}], absent: [code] }
// `absent` forms must print NIL in another session.
const generators = {
  defun(name) {
    const a = rng.int(-50, 50);
    const b = rng.int(-1000, 1000);
    const x = rng.int(-100, 100);
    return {
      define: [`(defun ${name} (x) (+ (* x ${a}) ${b}))`],
      defineValue: name.toUpperCase(),
      checks: [
        { code: `(not (null (fboundp '${name})))`, expect: 'T' },
        { code: `(${name} ${x})`, expect: String(x * a + b) },
        { code: `(funcall #'${name} 0)`, expect: String(b) },
      ],
      absent: [`(fboundp '${name})`],
    };
  },
  defvar(name) {
    const v = `*${name}*`;
    if (rng.next() < 0.5) {
      const n = rng.int(-1e6, 1e6);
      return {
        define: [`(defvar ${v} ${n})`],
        defineValue: v.toUpperCase(),
        checks: [
          { code: `(boundp '${v})`, expect: 'T' },
          { code: v, expect: String(n) },
          { code: `(1+ ${v})`, expect: String(n + 1) },
        ],
        absent: [`(boundp '${v})`],
      };
    }
    const s = randomString();
    return {
      define: [`(defvar ${v} ${lispString(s)})`],
      defineValue: v.toUpperCase(),
      checks: [
        { code: `(boundp '${v})`, expect: 'T' },
        { code: v, expect: lispString(s) },
        { code: `(length ${v})`, expect: String(s.length) },
      ],
      absent: [`(boundp '${v})`],
    };
  },
  defparameter(name) {
    const v = `*${name}*`;
    const xs = Array.from({ length: rng.int(0, 6) }, () => rng.int(0, 99));
    const lisp = xs.length ? `(${xs.join(' ')})` : 'NIL';
    return {
      define: [`(defparameter ${v} (list ${xs.join(' ')}))`],
      defineValue: v.toUpperCase(),
      checks: [
        { code: `(boundp '${v})`, expect: 'T' },
        { code: v, expect: lisp },
        { code: `(reduce #'+ ${v})`, expect: String(xs.reduce((p, q) => p + q, 0)) },
      ],
      absent: [`(boundp '${v})`],
    };
  },
  defmacro(name) {
    const k = rng.int(2, 9);
    const x = rng.int(-99, 99);
    return {
      define: [`(defmacro ${name} (form) \`(* ,form ${k}))`],
      defineValue: name.toUpperCase(),
      checks: [
        { code: `(not (null (macro-function '${name})))`, expect: 'T' },
        { code: `(${name} ${x})`, expect: String(x * k) },
        { code: `(values (macroexpand-1 '(${name} y)))`, expect: `(* Y ${k})` },
      ],
      absent: [`(macro-function '${name})`, `(fboundp '${name})`],
    };
  },
  defclass(name) {
    const v = rng.int(0, 1e5);
    const d = rng.int(0, 1e5);
    return {
      define: [`(defclass ${name} () ((val :initarg :val :accessor ${name}-val) (dflt :initform ${d} :reader ${name}-dflt)))`],
      defineValue: `#<STANDARD-CLASS COMMON-LISP-USER::${name.toUpperCase()}>`,
      checks: [
        { code: `(not (null (find-class '${name} nil)))`, expect: 'T' },
        { code: `(${name}-val (make-instance '${name} :val ${v}))`, expect: String(v) },
        { code: `(${name}-dflt (make-instance '${name}))`, expect: String(d) },
        { code: `(class-name (class-of (make-instance '${name})))`, expect: name.toUpperCase() },
      ],
      absent: [`(find-class '${name} nil)`, `(fboundp '${name}-val)`],
    };
  },
  defstruct(name) {
    const a = rng.int(-1e4, 1e4);
    const b = randomString();
    return {
      define: [`(defstruct ${name} a (b "" :type string))`],
      defineValue: name.toUpperCase(),
      checks: [
        { code: `(not (null (fboundp 'make-${name})))`, expect: 'T' },
        { code: `(${name}-a (make-${name} :a ${a} :b ${lispString(b)}))`, expect: String(a) },
        { code: `(${name}-b (make-${name} :a 0 :b ${lispString(b)}))`, expect: lispString(b) },
        { code: `(${name}-p (make-${name}))`, expect: 'T' },
      ],
      absent: [`(fboundp 'make-${name})`, `(find-class '${name} nil)`],
    };
  },
  defgeneric(name) {
    const k = rng.int(2, 20);
    const x = rng.int(-1000, 1000);
    const s = randomString();
    return {
      define: [
        `(defgeneric ${name} (thing))`,
        `(defmethod ${name} ((thing integer)) (* thing ${k}))`,
        `(defmethod ${name} ((thing string)) (length thing))`,
      ],
      defineValue: null, // a method object; do not check its printed form
      checks: [
        { code: `(typep (fdefinition '${name}) 'generic-function)`, expect: 'T' },
        { code: `(${name} ${x})`, expect: String(x * k) },
        { code: `(${name} ${lispString(s)})`, expect: String(s.length) },
        { code: `(length (sb-mop:generic-function-methods #'${name}))`, expect: '2' },
      ],
      absent: [`(fboundp '${name})`],
    };
  },
};

// Build ~N definitions with unique names, in random order.
const kinds = Object.keys(generators);
const defs = [];
const used = new Set();
for (let i = 0; i < N; i++) {
  const kind = i < kinds.length ? kinds[i] : rng.pick(kinds); // every kind at least once
  let name;
  do name = `gen-${kind.slice(3)}-${rng.word(5)}-${i}`;
  while (used.has(name));
  used.add(name);
  defs.push({ kind, name, ...generators[kind](name) });
}
const order = rng.shuffle(defs);

let A;
let B;

test(`${N} random definitions: define in A (one call each, or batched several forms per call)`, { timeout: 120_000 }, async () => {
  A = await createSession(srv, 'gen-a');
  B = await createSession(srv, 'gen-b');
  let i = 0;
  while (i < order.length) {
    // sometimes batch 2-3 definitions into one code string
    const batch = order.slice(i, i + (rng.next() < 0.3 ? rng.int(2, 3) : 1));
    i += batch.length;
    const code = batch.map((d) => d.define.join('\n')).join('\n');
    const r = await evaluate(srv, code, { session: A });
    assertOk(r, `[SEED=${rng.seed}] ${code}`);
    const last = batch[batch.length - 1];
    if (last.defineValue) assert.equal(value(r), last.defineValue, `[SEED=${rng.seed}] value of ${code}`);
  }
});

test('every definition is present in A and computes the expected values', { timeout: 120_000 }, async () => {
  assert.ok(A, 'definitions were not made');
  for (const d of rng.shuffle(order)) {
    for (const c of d.checks) {
      const r = await evaluate(srv, c.code, { session: A });
      assert.ok(!r.isError, `[SEED=${rng.seed}] ${d.kind} ${d.name}: ${c.code} failed:\n${describeResult(r)}\ndefinition: ${d.define.join(' ')}`);
      assert.equal(value(r), c.expect, `[SEED=${rng.seed}] ${d.kind} ${d.name}: ${c.code}\ndefinition: ${d.define.join(' ')}`);
    }
  }
});

test('no definition is visible in session B', { timeout: 120_000 }, async () => {
  assert.ok(B, 'session B was not made');
  for (const d of order) {
    for (const code of d.absent) {
      const r = await evaluate(srv, code, { session: B });
      assertOk(r, code);
      assert.equal(value(r), 'NIL', `[SEED=${rng.seed}] ${d.kind} ${d.name} leaked into session B: ${code}`);
    }
  }
});

test('no definition is visible in the default session either', { timeout: 120_000 }, async () => {
  // one batched check per kind of probe keeps this quick
  const probes = order.flatMap((d) => d.absent);
  const r = await evaluate(srv, `(loop for x in (list ${probes.join(' ')}) for i from 0 when x collect i)`);
  assertOk(r, 'batched absence probe');
  const got = value(r);
  const leaked = got === 'NIL' ? [] : got.slice(1, -1).split(/\s+/).map((i) => probes[Number(i)]);
  assert.deepEqual(leaked, [], `[SEED=${rng.seed}] leaked into the default session`);
});

test('redefinitions in A win, B still sees nothing', { timeout: 120_000 }, async () => {
  const funs = order.filter((d) => d.kind === 'defun');
  assert.ok(funs.length > 0);
  for (const d of funs) {
    const k = rng.int(1, 1000);
    await evaluate(srv, `(defun ${d.name} (x) (- x ${k}))`, { session: A }).then((r) => assertOk(r, d.name));
    const r = await evaluate(srv, `(${d.name} 5000)`, { session: A });
    assert.equal(value(assertOk(r)), String(5000 - k), `[SEED=${rng.seed}] redefined ${d.name}`);
    const rb = await evaluate(srv, `(fboundp '${d.name})`, { session: B });
    assert.equal(value(assertOk(rb)), 'NIL');
  }
});
