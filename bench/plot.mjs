// Draw bench/results.png from bench/results.json (written by build/bench):
// the distribution of stdio round trips beside the floor's, and total PSS and
// round-trip p99 against the number of live sessions. Needs gnuplot.
//
//   node bench/plot.mjs [bench/results.json] [bench/results.png]
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const input = process.argv[2] || 'bench/results.json';
const output = process.argv[3] || 'bench/results.png';
const results = JSON.parse(readFileSync(input, 'utf8'));

// Sorted samples as "latency fraction" lines: an empirical CDF.
function cdf(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted.map((ms, i) => `${ms} ${(i + 1) / sorted.length}`).join('\n');
}

const curve = (results['memory-curve'] || []).map((p) => `${p.sessions} ${p['pss-mb']} ${p['p99-ms']}`);
const script = `
set terminal pngcairo size 1400,560 font "sans,11"
set output "${output}"
$floor << EOD
${cdf(results['floor-samples'] || [0])}
EOD
$lispmcp << EOD
${cdf(results['add-samples'] || [0])}
EOD
$curve << EOD
${curve.join('\n') || '0 0 0'}
EOD
set multiplot layout 1,2
set title "Round trip over stdio, C client (CDF)"
set xlabel "round trip (ms)"
set ylabel "fraction of calls"
set key bottom right
set grid
set xrange [0:0.2]
plot $floor using 1:2 with lines lw 2 title "floor (canned answer)", \\
     $lispmcp using 1:2 with lines lw 2 title "lispmcp, (+ 1 2 3)"
set title "Live sessions: memory and round trip p99"
set xlabel "live sessions (each has evaluated)"
set ylabel "total PSS, server + workers (MB)"
set y2label "round trip p99 (ms)"
set ytics nomirror
set y2tics
set logscale x
set xrange [*:*]
set key top left
plot $curve using 1:2 with linespoints lw 2 pt 7 title "total PSS (MB)", \\
     $curve using 1:3 axes x1y2 with linespoints lw 2 pt 5 title "p99 round trip (ms)"
unset multiplot
`;
const run = spawnSync('gnuplot', [], { input: script, encoding: 'utf8' });
if (run.error || run.status !== 0) {
  console.error(`plot: gnuplot failed: ${run.error ? run.error.message : run.stderr}`);
  process.exit(1);
}
console.log(`drawn to ${output}`);
