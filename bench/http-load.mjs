// HTTP load test: CLIENTS concurrent MCP clients over Streamable HTTP (the official SDK client),
// each running CALLS evaluations in its own session, every result checked. Prints throughput,
// latency percentiles, errors (must be 0) and memory, and writes bench/http-load.json.
//
//   CLIENTS=50 CALLS=200 node bench/http-load.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startHttpServer, connectHttp, childPids, REPO_ROOT } from '../tests/e2e/helpers.mjs';

const CLIENTS = Number(process.env.CLIENTS || 50);
const CALLS = Number(process.env.CALLS || 200);

function kb(pid, file, field) {
  try {
    const m = readFileSync(`/proc/${pid}/${file}`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+)`, 'm'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const srv = await startHttpServer({ args: ['--max-sessions', String(CLIENTS + 10)] });
  const before = { serverRssKb: kb(srv.pid, 'status', 'VmRSS'), serverPssKb: kb(srv.pid, 'smaps_rollup', 'Pss') };
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => connectHttp(srv.url)));
  // Start every client's worker first: the figures are about evaluations, not start-up.
  await Promise.all(clients.map((c) => c.client.callTool({ name: 'evaluate-lisp', arguments: { code: 'nil' } })));

  const latencies = [];
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (c, k) => {
      for (let i = 0; i < CALLS; i++) {
        const s = performance.now();
        try {
          const r = await c.client.callTool({ name: 'evaluate-lisp', arguments: { code: `(+ ${i} ${k})` } });
          if (r.isError || r.structuredContent?.values?.[0] !== String(i + k)) errors++;
        } catch {
          errors++;
        }
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const workers = childPids(srv.pid);
  const after = {
    serverRssKb: kb(srv.pid, 'status', 'VmRSS'),
    serverPssKb: kb(srv.pid, 'smaps_rollup', 'Pss'),
    workers: workers.length,
    workersPssKb: workers.reduce((sum, p) => sum + kb(p, 'smaps_rollup', 'Pss'), 0),
  };
  await Promise.all(clients.map((c) => c.transport.terminateSession().catch(() => {})));
  await Promise.all(clients.map((c) => c.close()));
  const exit = await srv.stop();

  latencies.sort((a, b) => a - b);
  const result = {
    clients: CLIENTS,
    callsPerClient: CALLS,
    calls: latencies.length,
    errors,
    seconds: +seconds.toFixed(3),
    throughputPerSec: Math.round(latencies.length / seconds),
    latencyMs: {
      p50: +percentile(latencies, 50).toFixed(3),
      p90: +percentile(latencies, 90).toFixed(3),
      p99: +percentile(latencies, 99).toFixed(3),
      max: +latencies[latencies.length - 1].toFixed(3),
    },
    memory: { before, after },
    serverExit: exit,
  };
  const out = path.join(REPO_ROOT, 'bench', 'http-load.json');
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  console.log(`HTTP load: ${CLIENTS} clients x ${CALLS} evaluations of (+ i k), each in its own session`);
  console.log(`  calls            ${result.calls}  (errors: ${errors})`);
  console.log(`  throughput       ${result.throughputPerSec} evaluations/s  (${result.seconds} s)`);
  console.log(`  latency p50/p90/p99/max  ${result.latencyMs.p50} / ${result.latencyMs.p90} / ${result.latencyMs.p99} / ${result.latencyMs.max} ms`);
  console.log(`  server RSS       ${before.serverRssKb} kB before, ${after.serverRssKb} kB after (PSS ${before.serverPssKb} -> ${after.serverPssKb} kB)`);
  console.log(`  workers          ${after.workers}, total PSS ${(after.workersPssKb / 1024).toFixed(1)} MB`);
  console.log(`  written to       ${path.relative(REPO_ROOT, out)}`);
  if (errors || exit.code !== 0) process.exit(1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
