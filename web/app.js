// Rebound dashboard: a small single-page app over the JSON API (docs/http.md).
// Plain JS, no framework, no network beyond this server; charts are SVG drawn here.
'use strict';

// --- helpers ---------------------------------------------------------------

// h('div', {class: 'x', onclick: f}, child, ...): builds an element; strings
// become text nodes (never HTML), arrays are flattened, null is skipped.
// A style is set through the CSSOM: the Content-Security-Policy refuses
// inline style attributes.
function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'style') el.style.cssText = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  const add = (c) => {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) c.forEach(add);
    else el.append(c instanceof Node ? c : String(c));
  };
  kids.forEach(add);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of kids.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

async function api(method, path, body) {
  const opts = {method, headers: {}};
  if (body !== undefined) {
    opts.body = typeof body === 'string' ? body : JSON.stringify(body);
    opts.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch('/api/' + path, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { /* not JSON */ }
  if (!r.ok) throw new Error((data && data.error && data.error.message) || (r.status + ' ' + r.statusText));
  return data;
}

function toast(msg, bad) {
  const t = h('div', {class: bad ? 'bad' : ''}, msg);
  document.getElementById('toast').append(t);
  setTimeout(() => t.remove(), bad ? 6000 : 3000);
}

const fmtN = (n) => (n === null || n === undefined) ? '–' : Number(n).toLocaleString('en-US');

function fmtDur(ms) {
  if (ms === null || ms === undefined) return '–';
  ms = Math.round(ms);
  if (ms === 0) return '0';
  if (ms < 1000) return ms + 'ms';
  const parts = [];
  let sec = Math.floor(ms / 1000);
  const rest = ms % 1000;
  for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]]) {
    if (sec >= n) { parts.push(Math.floor(sec / n) + u); sec %= n; }
    if (parts.length === 2) break;
  }
  if (parts.length === 1 && rest && ms < 10000) return (ms / 1000).toFixed(1).replace(/\.0$/, '') + 's';
  return parts.join(' ');
}

function fmtTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

// "in 5m" / "3m ago", with the exact time as a tooltip.
function rel(iso) {
  if (!iso) return h('span', {class: 'muted'}, '–');
  const ms = new Date(iso).getTime() - Date.now();
  const txt = Math.abs(ms) < 1000 ? 'now' : ms > 0 ? 'in ' + fmtDur(ms) : fmtDur(-ms) + ' ago';
  return h('span', {title: fmtTime(iso)}, txt);
}

function pill(text, cls) { return h('span', {class: 'pill ' + (cls || text)}, text); }

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query] = raw.split('?');
  return {path, params: new URLSearchParams(query || '')};
}

// --- page lifecycle: one page at a time, its timers cleared on leave -------

let timers = [];
function every(ms, fn) { fn(); timers.push(setInterval(fn, ms)); }
function leave() { timers.forEach(clearInterval); timers = []; }

const main = () => document.getElementById('main');
// Replaces an element's children; null/false entries are skipped.
function fill(el, ...kids) { el.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false)); }
function show(...kids) { fill(main(), ...kids); }

// --- charts ----------------------------------------------------------------

// Axis ticks on round values from 0 to at least max, at most n + 1 of
// them: steps of 1, 2 or 5 times a power of ten, whole numbers when
// integer (counts per second).
function niceTicks(max, n, integer) {
  max = Math.max(max, integer ? 1 : 1e-9);
  let step = Infinity;
  for (let p = Math.pow(10, Math.floor(Math.log10(max / n)) - 1); step === Infinity; p *= 10)
    for (const m of [1, 2, 5]) if (m * p * n >= max && (!integer || m * p >= 1)) { step = m * p; break; }
  const top = Math.ceil(max / step - 1e-9) * step;
  return Array.from({length: Math.round(top / step) + 1}, (_, i) => i * step);
}

// Round durations for a schedule's axis (ms): linear steps people count in,
// and the marks of a log scale.
const DUR_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3,
  300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 3 * 3600e3, 6 * 3600e3, 12 * 3600e3, 86400e3,
  2 * 86400e3, 7 * 86400e3, 14 * 86400e3, 30 * 86400e3];
const DUR_LOG_MARKS = [1, 10, 100, 1e3, 10e3, 60e3, 600e3, 3600e3, 6 * 3600e3, 86400e3, 7 * 86400e3,
  30 * 86400e3, 365 * 86400e3];

// Linear ticks 0..top for durations up to max (ms), at most 5 steps.
function durationTicks(max) {
  const step = DUR_STEPS.find((st) => st * 5 >= max) || Math.ceil(max / 5 / 86400e3) * 86400e3;
  const top = Math.max(Math.ceil(max / step), 1) * step;
  return Array.from({length: Math.round(top / step) + 1}, (_, i) => i * step);
}

// Lines over time: series = [{name, color, values: [{t, v}]}].
function lineChart(series, opts) {
  const W = 900, H = opts.height || 220, L = 44, R = 10, T = 10, B = 24;
  const all = series.flatMap((x) => x.values);
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': opts.label || 'chart'});
  if (!all.length) {
    svg.append(s('text', {x: W / 2, y: H / 2, 'text-anchor': 'middle'}, 'collecting samples…'));
    return svg;
  }
  const t0 = Math.min(...all.map((p) => p.t)), t1 = Math.max(...all.map((p) => p.t), t0 + 1);
  const ticks = niceTicks(Math.max(...all.map((p) => p.v), 1), 4, true);
  const vmax = ticks[ticks.length - 1];
  const x = (t) => L + (t - t0) / (t1 - t0) * (W - L - R);
  const y = (v) => T + (1 - v / vmax) * (H - T - B);
  for (const v of ticks) {
    svg.append(s('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid'}));
    svg.append(s('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick', 'data-v': v}, fmtN(v)));
  }
  for (let i = 0; i <= 5; i++) {
    const t = t0 + (t1 - t0) * i / 5;
    const d = new Date(t * 1000);
    svg.append(s('text', {x: x(t), y: H - 6, 'text-anchor': i === 0 ? 'start' : i === 5 ? 'end' : 'middle'}, d.toTimeString().slice(0, 8)));
  }
  for (const ser of series) {
    if (!ser.values.length) continue;
    const d = ser.values.map((p, i) => (i ? 'L' : 'M') + x(p.t).toFixed(1) + ' ' + y(p.v).toFixed(1)).join(' ');
    svg.append(s('path', {d, fill: 'none', stroke: ser.color, 'stroke-width': 2, 'stroke-linejoin': 'round'}));
  }
  return svg;
}

function legend(items) {
  return h('div', {class: 'legend'}, items.map(([name, color]) => h('span', {}, h('i', {style: 'background:' + color}), name)));
}

const OUTCOME_COLOR = {retry: '#c77700', dead: '#d33b3b', discard: '#8a93a6', catch: '#7b4fd6'};

// The schedule of a simulation: one bar per failed attempt, its height the
// delay before the next attempt (log scale when delays span > 100x); the
// final outcome as a marker. The y axis has round ticks (5s, 15s, 1m; on a
// log scale 1s, 10s, 1m, 10m, 1h, 1d) and a title above it saying which
// scale it is.
function scheduleChart(sim) {
  const steps = sim.attempts || [];
  const W = 900, H = 240, L = 56, R = 12, T = 26, B = 30;
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': 'retry schedule', 'data-testid': 'schedule-chart'});
  if (!steps.length) return svg;
  const delays = steps.filter((x) => x.outcome === 'retry').map((x) => x.delay_ms);
  const dmax = Math.max(...delays, 1), dmin = Math.max(Math.min(...delays.filter((d) => d > 0), dmax), 1);
  const log = dmax / dmin > 100;
  let ticks, y;
  if (log) {
    const hi = DUR_LOG_MARKS.findIndex((v) => v >= dmax);
    const top = hi < 0 ? dmax : DUR_LOG_MARKS[hi];
    const below = DUR_LOG_MARKS.filter((v) => v < dmin);
    const bottom = below.length ? below[below.length - 1] : 1;
    ticks = DUR_LOG_MARKS.filter((v) => v >= bottom && v <= top);
    y = (d) => T + (1 - (Math.log10(Math.max(d, bottom)) - Math.log10(bottom)) / (Math.log10(top) - Math.log10(bottom))) * (H - T - B);
  } else {
    ticks = durationTicks(dmax);
    const top = ticks[ticks.length - 1];
    y = (d) => T + (1 - d / top) * (H - T - B);
  }
  const n = steps.length, bw = (W - L - R) / n;
  for (const v of ticks) {
    svg.append(s('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid'}));
    svg.append(s('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick', 'data-ms': v}, fmtDur(v)));
  }
  svg.append(s('text', {x: 4, y: 12, 'text-anchor': 'start', class: 'axis-note', 'data-testid': 'schedule-scale'},
    log ? 'delay before the next attempt (log scale)' : 'delay before the next attempt'));
  const every_n = Math.ceil(n / 30);
  steps.forEach((st, i) => {
    const cx = L + i * bw;
    if (st.outcome === 'retry') {
      const bar = s('rect', {x: cx + bw * 0.15, width: Math.max(bw * 0.7, 1), y: y(st.delay_ms), height: Math.max(H - B - y(st.delay_ms), 1), fill: '#3457d5', rx: 2});
      bar.append(s('title', {}, `attempt ${st.attempt} failed → retry after ${fmtDur(st.delay_ms)} (at +${fmtDur(st.at_ms)})`));
      svg.append(bar);
    } else {
      const mk = s('circle', {cx: cx + bw / 2, cy: H - B - 8, r: Math.min(7, bw / 2), fill: OUTCOME_COLOR[st.outcome] || '#d33b3b'});
      mk.append(s('title', {}, `attempt ${st.attempt} failed → ${st.outcome} (${st.reason})`));
      svg.append(mk);
    }
    if (i % every_n === 0) svg.append(s('text', {x: cx + bw / 2, y: H - 10, 'text-anchor': 'middle'}, st.attempt));
  });
  return svg;
}

function scheduleTable(sim, limit) {
  const rows = (sim.attempts || []).slice(0, limit || 1000);
  const at = rows.some((st) => st.at);
  return h('table', {'data-testid': 'schedule-table'},
    h('thead', {}, h('tr', {}, h('th', {class: 'num'}, 'attempt'), h('th', {}, 'then'), h('th', {class: 'num'}, 'delay'), h('th', {class: 'num'}, 'since first run'), at ? h('th', {}, 'at') : null)),
    h('tbody', {}, rows.map((st) => h('tr', {},
      h('td', {class: 'num'}, st.attempt),
      h('td', {}, pill(st.outcome, st.outcome === 'retry' ? 'retry' : 'fail'), st.reason ? ' ' + st.reason : st.source && st.source !== 'computed' ? ' ' + st.source : ''),
      h('td', {class: 'num'}, st.outcome === 'retry' ? fmtDur(st.delay_ms) : '–'),
      h('td', {class: 'num'}, st.at_ms !== undefined ? fmtDur(st.at_ms) : '–'),
      at ? h('td', {class: 'muted'}, st.at ? fmtTime(st.at) : '') : null))));
}

// --- overview --------------------------------------------------------------

function overview() {
  const cards = h('div', {class: 'cards', 'data-testid': 'cards'});
  const chart = h('div', {});
  const qbox = h('div', {});
  show(h('h1', {}, 'Overview'), cards,
    h('div', {class: 'panel'}, h('h2', {}, 'Throughput (jobs per second, last 5 minutes)'), chart,
      legend([['processed', '#1f9d55'], ['failed', '#d33b3b'], ['pushed', '#3457d5']])),
    h('div', {class: 'panel'}, h('h2', {}, 'Queues'), qbox));
  every(2000, async () => {
    try {
      const [info, stats, qs] = await Promise.all([api('GET', 'info'), api('GET', 'stats'), api('GET', 'queues')]);
      const j = info.jobs;
      const card = (label, n, href, cls) => h('a', {class: 'card ' + (cls || ''), href: href || null, 'data-testid': 'card-' + label.replace(/ .*/, '')},
        h('div', {class: 'n'}, fmtN(n)), h('div', {class: 'l'}, label));
      fill(cards,
        card('enqueued', j.enqueued, '#/queues'), card('working', j.working, null, 'ok'),
        card('scheduled', j.scheduled, '#/scheduled'), card('retries', j.retries, '#/retries', j.retries ? 'warn' : ''),
        card('dead', j.dead, '#/dead', j.dead ? 'bad' : ''),
        card('waiting', j.waiting, '#/waiting'), card('blocked', j.blocked, '#/blocked', j.blocked ? 'held' : ''),
        card('processed', info.all_time.processed), card('failures', info.all_time.failures),
        info.all_time.expired !== null ? card('expired', info.all_time.expired) : null,
        info.unique ? card('unique locks', info.unique.locks) : null,
        info.cron.entries ? card('cron entries', info.cron.entries, '#/cron') : null,
        info.throttles.queues ? card('throttle slots in use', info.throttles.in_use, '#/throttles') : null,
        card('workers', info.server.workers, '#/workers'));
      const smp = stats.samples;
      const ser = (k) => smp.map((p) => ({t: p.t, v: p[k]}));
      chart.replaceChildren(lineChart([
        {name: 'pushed', color: '#3457d5', values: ser('pushed')},
        {name: 'failed', color: '#d33b3b', values: ser('failed')},
        {name: 'processed', color: '#1f9d55', values: ser('processed')}], {label: 'throughput'}));
      qbox.replaceChildren(queueTable(qs.queues, false));
    } catch (e) { /* the status line says the server is unreachable */ }
  });
}

// --- queues ----------------------------------------------------------------

function queueTable(queues, actions) {
  if (!queues.length) return h('div', {class: 'empty'}, 'No queues yet.');
  return h('table', {'data-testid': 'queues'},
    h('thead', {}, h('tr', {}, h('th', {}, 'queue'), h('th', {class: 'num'}, 'size'), h('th', {class: 'num'}, 'latency'), h('th', {}, 'state'), actions ? h('th', {}, '') : null)),
    h('tbody', {}, queues.map((q) => h('tr', {'data-queue': q.name},
      h('td', {}, h('a', {href: '#/enqueued?queue=' + encodeURIComponent(q.name)}, q.name)),
      h('td', {class: 'num'}, fmtN(q.size)),
      h('td', {class: 'num'}, q.size ? fmtDur(q.latency_s * 1000) : '–'),
      h('td', {'data-testid': 'queue-state'}, q.paused ? pill('paused') : pill('active', 'ok')),
      actions ? h('td', {}, h('button', {class: 'small', 'data-testid': q.paused ? 'resume' : 'pause',
        onclick: async (ev) => {
          ev.target.disabled = true;
          try {
            await api('POST', 'queues/' + encodeURIComponent(q.name) + '/' + (q.paused ? 'resume' : 'pause'));
            toast(`Queue ${q.name} ${q.paused ? 'resumed' : 'paused'}`);
          } catch (e) { toast(e.message, true); }
          refreshQueues();
        }}, q.paused ? 'Resume' : 'Pause')) : null))));
}

let refreshQueues = () => {};
function queues() {
  const box = h('div', {class: 'panel'});
  show(h('h1', {}, 'Queues'), box);
  refreshQueues = async () => {
    try { box.replaceChildren(queueTable((await api('GET', 'queues')).queues, true)); }
    catch (e) { box.replaceChildren(h('div', {class: 'error-box'}, e.message)); }
  };
  every(3000, refreshQueues);
}

// --- job lists (scheduled, retries, dead, enqueued, working, waiting, blocked)

const LIST_TITLE = {scheduled: 'Scheduled', retries: 'Retries', dead: 'Dead', enqueued: 'Enqueued', working: 'In progress',
  waiting: 'Waiting', blocked: 'Blocked'};
const PAGE = 25;
const HELD = ['waiting', 'blocked']; // a workflow's jobs held by their parents (docs/workflows.md)
const jidLinks = (jids) => jids && jids.length
  ? jids.map((p, i) => [i ? ', ' : '', h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(p)}, p)])
  : h('span', {class: 'muted'}, '–');

// The waiting and blocked lists: each job with the parents it waits for, the
// dead one blocking it, and its workflow; MUTATE does not move them.
function heldRows(state, jobs) {
  return h('table', {'data-testid': 'jobs'},
    h('thead', {}, h('tr', {}, h('th', {}, 'job'), h('th', {}, 'queue'), h('th', {}, 'args'), h('th', {}, 'waits for'),
      state === 'blocked' ? h('th', {}, 'blocked by') : null, h('th', {}, 'created'), h('th', {}, ''))),
    h('tbody', {}, jobs.map((j) => h('tr', {'data-jid': j.jid},
      h('td', {}, h('a', {href: '#/job/' + encodeURIComponent(j.jid)}, j.jobtype), h('div', {class: 'muted mono'}, j.jid)),
      h('td', {}, j.queue),
      h('td', {}, h('code', {class: 'args', title: JSON.stringify(j.args)}, JSON.stringify(j.args))),
      h('td', {'data-testid': 'waits-for'}, jidLinks(j.waits_for)),
      state === 'blocked' ? h('td', {class: 'err', 'data-testid': 'blocked-by'}, j.blocked_by ? jidLinks([j.blocked_by]) : '–') : null,
      h('td', {}, rel(j.created_at)),
      h('td', {}, h('a', {class: 'wf-link', href: '#/workflow/' + encodeURIComponent(j.jid)}, 'workflow'))))));
}

function jobList(state, params) {
  const mutable = ['scheduled', 'retries', 'dead'].includes(state);
  const held = HELD.includes(state);
  const f = {queue: params.get('queue') || '', jobtype: params.get('jobtype') || ''};
  if (!held) f.errtype = params.get('errtype') || ''; // a held job has not run
  if (state === 'enqueued') f.group = params.get('group') || ''; // custom.group (the Groups page links here)
  const page = Math.max(parseInt(params.get('page') || '1', 10), 1);
  const selected = new Set();
  const inputs = {};
  const filterBar = h('form', {class: 'toolbar', onsubmit: (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const k of Object.keys(inputs)) if (inputs[k].value) q.set(k, inputs[k].value);
    location.hash = '#/' + state + (q.toString() ? '?' + q : '');
  }}, Object.keys(f).map((k) => (inputs[k] = h('input', {name: k, placeholder: k, value: f[k], size: 14}))),
  h('button', {type: 'submit'}, 'Filter'));
  const bulk = h('div', {class: 'toolbar'});
  const box = h('div', {});
  const pager = h('div', {class: 'pager'});
  const tabs = held ? h('div', {class: 'toolbar tabs', 'data-testid': 'held-tabs'}, HELD.map((st) =>
    h('a', {class: 'tab' + (st === state ? ' active' : ''), href: '#/' + st, 'data-state': st}, LIST_TITLE[st], ' ', h('b', {class: 'badge', id: 'tab-' + st})))) : null;
  const note = held ? h('div', {class: 'muted', style: 'margin-bottom:8px'}, state === 'waiting'
    ? 'Jobs of a workflow waiting for their parents (custom.depends_on): each runs once every parent has succeeded.'
    : 'Jobs of a workflow whose parent died (on_dep_failure "block"): retry the dead parent (its job page says which job to retry) and they wait again; discarding it kills them.') : null;
  show(h('h1', {}, LIST_TITLE[state]), tabs, h('div', {class: 'panel'}, note, filterBar, mutable ? bulk : null, box, pager));
  if (held) header(); // the tabs' counts

  async function act(action, all) {
    const body = {state};
    if (all) Object.assign(body, {all: true}, Object.fromEntries(Object.entries(f).filter(([, v]) => v)));
    else body.jids = [...selected];
    const what = all ? 'every matching job' : `${selected.size} job(s)`;
    if ((action !== 'retry') && !confirm(`${action} ${what}?`)) return;
    try {
      const r = await api('POST', 'jobs/' + action, body);
      toast(`${action}: ${r.changed} job(s)`);
    } catch (e) { toast(e.message, true); }
    selected.clear();
    load();
  }

  function bulkBar(total) {
    const n = selected.size;
    fill(bulk,
      h('span', {class: 'muted', 'data-testid': 'selected'}, n ? `${n} selected` : 'Select jobs, or act on all matching'),
      h('button', {disabled: !n, 'data-testid': 'bulk-retry', onclick: () => act('retry', false)}, 'Retry now'),
      state !== 'dead' ? h('button', {disabled: !n, 'data-testid': 'bulk-kill', onclick: () => act('kill', false)}, 'Kill') : null,
      h('button', {class: 'danger', disabled: !n, 'data-testid': 'bulk-discard', onclick: () => act('discard', false)}, 'Discard'),
      h('span', {class: 'sp'}),
      h('button', {disabled: !total, 'data-testid': 'all-retry', onclick: () => act('retry', true)}, `Retry all ${fmtN(total)}`),
      h('button', {class: 'danger', disabled: !total, 'data-testid': 'all-discard', onclick: () => act('discard', true)}, `Discard all ${fmtN(total)}`));
  }

  async function load() {
    const q = new URLSearchParams({state, offset: (page - 1) * PAGE, limit: PAGE});
    for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
    let res;
    try { res = await api('GET', 'jobs?' + q); }
    catch (e) { box.replaceChildren(h('div', {class: 'error-box'}, e.message)); return; }
    if (mutable) bulkBar(res.total);
    if (!res.jobs.length) box.replaceChildren(h('div', {class: 'empty', 'data-testid': 'empty'}, 'No jobs.'));
    else if (held) box.replaceChildren(heldRows(state, res.jobs));
    else {
      const when = state === 'dead' ? 'expires' : state === 'working' ? 'reserved until' : state === 'enqueued' ? 'enqueued' : 'runs';
      const allBox = h('input', {type: 'checkbox', title: 'select the page', onchange: (ev) => {
        res.jobs.forEach((j) => ev.target.checked ? selected.add(j.jid) : selected.delete(j.jid));
        box.querySelectorAll('input[data-jid]').forEach((c) => { c.checked = ev.target.checked; });
        bulkBar(res.total);
      }});
      box.replaceChildren(h('table', {'data-testid': 'jobs'},
        h('thead', {}, h('tr', {}, mutable ? h('th', {}, allBox) : null, h('th', {}, 'job'), h('th', {}, 'queue'), h('th', {}, 'args'),
          h('th', {class: 'num'}, 'attempts'), state === 'enqueued' ? null : h('th', {}, 'error'), h('th', {}, when))),
        h('tbody', {}, res.jobs.map((j) => h('tr', {'data-jid': j.jid},
          mutable ? h('td', {}, h('input', {type: 'checkbox', 'data-jid': j.jid, checked: selected.has(j.jid), onchange: (ev) => {
            ev.target.checked ? selected.add(j.jid) : selected.delete(j.jid);
            bulkBar(res.total);
          }})) : null,
          h('td', {}, h('a', {href: '#/job/' + encodeURIComponent(j.jid)}, j.jobtype), h('div', {class: 'muted mono'}, j.jid)),
          h('td', {}, j.queue),
          h('td', {}, h('code', {class: 'args', title: JSON.stringify(j.args)}, JSON.stringify(j.args))),
          h('td', {class: 'num'}, j.attempts),
          state === 'enqueued' ? null : h('td', {}, j.failure ? [h('span', {class: 'err'}, j.failure.errtype), h('span', {class: 'msg', title: j.failure.message}, j.failure.message)] : h('span', {class: 'muted'}, '–')),
          h('td', {}, rel(j.next_at || j.expires_at || j.reserved_until || j.enqueued_at)))))));
    }
    const pages = Math.max(Math.ceil(res.total / PAGE), 1);
    const go = (p) => { const qq = new URLSearchParams(params); qq.set('page', p); location.hash = '#/' + state + '?' + qq; };
    pager.replaceChildren(h('span', {class: 'muted', 'data-testid': 'total'}, `${fmtN(res.total)} job(s) · page ${page} of ${pages}`),
      h('button', {disabled: page <= 1, onclick: () => go(page - 1)}, '‹ Prev'),
      h('button', {disabled: page >= pages, onclick: () => go(page + 1)}, 'Next ›'),
      h('button', {onclick: load}, 'Refresh'));
  }
  load();
}

// --- one job ---------------------------------------------------------------

// Text widths in the charts' units (11px, the page's font), for laying out
// labels before they are drawn.
let measureCtx = null;
function textWidth(text, font) {
  if (!measureCtx) measureCtx = document.createElement('canvas').getContext('2d');
  measureCtx.font = (font || '11px') + ' ' + getComputedStyle(document.body).fontFamily;
  return measureCtx.measureText(text).width;
}

// text cut to fit max pixels in font ('13px bold'...), with an ellipsis at
// its end, or in its middle (a jid: its start and end both tell it apart).
function clipText(text, max, font, middle) {
  if (textWidth(text, font) <= max) return text;
  const cut = (k) => middle ? text.slice(0, Math.ceil(k / 2)) + '…' + text.slice(text.length - Math.floor(k / 2)) : text.slice(0, k) + '…';
  let lo = 0, hi = text.length - 1; // the most characters kept that fit
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (textWidth(cut(mid), font) <= max) lo = mid; else hi = mid - 1;
  }
  return cut(lo);
}

// The attempts' markers and labels on the timeline, laid out so that none
// overlap. One attempt is a dot; attempts that would touch share a marker
// from the first's dot to the last's, at least wide enough for their count
// written inside, and labelled with their range, "#3–#7". Each label goes
// on the lowest of LABEL_ROWS rows where it clears the label before it,
// kept inside [0, W]; when it fits on no row its group joins the one
// before and the labels are laid out again. Returns, in time order,
// [{items, x0, x1, left, right, count, label, lx, w, row}]: x0/x1 the first
// and last attempt's x (x maps ms to the axis), left/right the marker's
// extent, lx and row the label's centre and row.
const DOT_R = 7, MARK_GAP = 3, LABEL_ROWS = 3, LABEL_GAP = 6, LABEL_EDGE = 2;
function attemptGroups(hist, x, W) {
  const sorted = hist.slice().sort((a, b) => Date.parse(a.at) - Date.parse(b.at) || a.attempt - b.attempt);
  const extent = (g) => {
    g.count = g.items.length > 1 ? String(g.items.length) : '';
    g.left = g.x0 - DOT_R;
    g.right = Math.max(g.x1 + DOT_R, g.count ? g.left + textWidth(g.count) + 12 : 0);
  };
  const groups = [];
  for (const a of sorted) {
    const ax = x(Date.parse(a.at));
    const g = groups[groups.length - 1];
    if (g && ax - DOT_R < g.right + MARK_GAP) {
      g.items.push(a);
      g.x1 = ax;
    } else groups.push({items: [a], x0: ax, x1: ax});
    extent(groups[groups.length - 1]);
  }
  for (;;) {
    const right = new Array(LABEL_ROWS).fill(-Infinity);
    let clash = -1;
    for (let i = 0; i < groups.length && clash < 0; i++) {
      const g = groups[i], n = g.items.length;
      const first = g.items[0].attempt, last = g.items[n - 1].attempt;
      g.label = n === 1 ? '#' + first : `#${first}–#${last}` + (last - first + 1 === n ? '' : ` (${n})`);
      g.w = textWidth(g.label);
      g.lx = Math.min(Math.max((g.left + g.right) / 2, LABEL_EDGE + g.w / 2), W - LABEL_EDGE - g.w / 2);
      g.row = right.findIndex((r) => g.lx - g.w / 2 >= r + LABEL_GAP);
      if (g.row < 0) clash = i; else right[g.row] = g.lx + g.w / 2;
    }
    if (clash < 0) return groups;
    const prev = groups[clash - 1], g = groups[clash];
    prev.items.push(...g.items);
    prev.x1 = g.x1;
    extent(prev);
    groups.splice(clash, 1);
  }
}

// A history entry that records a death by a dependency: no attempt (the job
// never ran then; docs/workflows.md).
const byDependency = (a) => a.reason === 'dependency';

// Labels under the timeline's line, [{x, text, ...}]: each on the first of
// two rows where it clears the labels before it, kept inside [0, W];
// returns them with their y.
function belowLabels(items, W, Y) {
  const rows = [Y + 24, Y + 38], right = rows.map(() => -Infinity);
  return items.slice().sort((a, b) => a.x - b.x).map((it) => {
    const w = textWidth(it.text);
    const cx = Math.min(Math.max(it.x, LABEL_EDGE + w / 2), W - LABEL_EDGE - w / 2);
    let row = right.findIndex((r) => cx - w / 2 >= r + LABEL_GAP);
    if (row < 0) row = rows.length - 1;
    right[row] = cx + w / 2;
    return {...it, cx, y: rows[row]};
  });
}

// The job's life on a time axis: created, each failed attempt (red, with its
// retry wait as a band; attempts too close to tell apart share a marker
// labelled with their range), a death by a dependency, the next run or the
// end of the lease (labelled under the line, beside "now").
function timeline(job) {
  const hist = (job.history || []).filter((a) => !byDependency(a));
  const ends = [];
  const start = job.schedule && job.schedule.first_enqueued_at || job.created_at;
  if (start) ends.push({t: Date.parse(start), kind: 'start', label: 'first enqueued'});
  for (const a of (job.history || []).filter(byDependency))
    ends.push({t: Date.parse(a.at), kind: 'dead', label: 'killed: ' + a.message, tag: 'killed'});
  const future = job.next_at || job.reserved_until;
  if (future) ends.push({t: Date.parse(future), kind: 'next', label: job.state === 'working' ? 'lease ends' : 'next attempt',
    tag: job.state === 'working' ? 'lease ends' : 'next attempt'});
  const W = 900, H = 118, L = 20, R = 36, Y = 58;
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': 'attempt timeline', 'data-testid': 'timeline'});
  const times = ends.map((p) => p.t).concat(hist.map((a) => Date.parse(a.at)));
  if (!times.length) return svg;
  const now = Date.now();
  const t0 = Math.min(...times), t1 = Math.max(...times, now, t0 + 1000);
  const x = (t) => L + (t - t0) / (t1 - t0) * (W - L - R);
  const color = (kind) => kind === 'start' ? '#8a93a6' : kind === 'next' ? '#3457d5' : OUTCOME_COLOR[kind] || '#d33b3b';
  const when = (t) => fmtTime(new Date(t).toISOString());
  svg.append(s('line', {x1: L, x2: W - R, y1: Y, y2: Y, stroke: '#c8cedc', 'stroke-width': 2}));
  hist.forEach((a) => {
    if (a.outcome === 'retry' && a.delay_ms) {
      const a0 = Date.parse(a.at);
      svg.append(s('rect', {x: x(a0), y: Y - 5, width: Math.max(x(a0 + a.delay_ms) - x(a0), 1), height: 10, fill: '#fff2de', stroke: '#e8c48a'}));
    }
  });
  const below = belowLabels([{x: x(now), text: 'now', now: true}]
    .concat(ends.filter((p) => p.tag).map((p) => ({x: x(p.t), text: p.tag, title: p.label + ' · ' + when(p.t)}))), W, Y);
  for (const b of below) {
    if (b.now) svg.append(s('line', {x1: b.x, x2: b.x, y1: Y - 10, y2: b.y - 11, stroke: '#3457d5', 'stroke-dasharray': '3 3'}));
    const t = s('text', {x: b.cx, y: b.y, 'text-anchor': 'middle', class: b.now ? 'now-label' : 'end-label'}, b.text);
    if (b.title) t.append(s('title', {}, b.title));
    svg.append(t);
  }
  for (const p of ends) {
    const c = s('circle', {cx: x(p.t), cy: Y, r: 7, fill: p.kind === 'next' ? '#fff' : color(p.kind), stroke: color(p.kind), 'stroke-width': 2});
    c.append(s('title', {}, p.label + ' · ' + when(p.t)));
    svg.append(c);
  }
  for (const g of attemptGroups(hist, x, W)) {
    const n = g.items.length, last = g.items[n - 1];
    const end = g.items.find((a) => a.outcome !== 'retry'); // dead, discard, catch
    const kind = end ? end.outcome : 'retry';
    const mk = n === 1
      ? s('circle', {cx: g.x0, cy: Y, r: DOT_R, fill: color(kind), class: 'mk'})
      : s('g', {class: 'mk'},
        s('rect', {x: g.left, y: Y - DOT_R - 1, width: g.right - g.left, height: 2 * DOT_R + 2, rx: DOT_R + 1, fill: color(kind)}),
        s('text', {x: (g.left + g.right) / 2, y: Y + 4, 'text-anchor': 'middle', class: 'count'}, g.count));
    const lines = g.items.slice(0, 20).map((a) => `attempt ${a.attempt}: ${a.errtype} · ${when(Date.parse(a.at))}`);
    if (n > 20) lines.push(`… and ${n - 20} more (listed below)`);
    mk.append(s('title', {}, (n > 1 ? `${n} attempts\n` : '') + lines.join('\n')));
    svg.append(mk);
    svg.append(s('text', {x: g.lx, y: Y - 15 - g.row * 14, 'text-anchor': 'middle', class: 'mk-label',
      'data-first': g.items[0].attempt, 'data-last': last.attempt}, g.label));
  }
  svg.append(s('text', {x: L, y: H - 4}, when(t0)));
  svg.append(s('text', {x: W - R, y: H - 4, 'text-anchor': 'end'}, when(t1)));
  return svg;
}

// The workflow graph of a job (GET /api/workflow/JID), or null when it is in
// none (no parent, no child) or the server has none for it.
async function workflowOf(job) {
  try {
    const g = await api('GET', 'workflow/' + encodeURIComponent(job.jid));
    return g.edges.length > 0 ? g : null;
  } catch (e) { return null; }
}

// The parent whose death killed a dead job (its last history entry, reason
// dependency), or null.
function killedBy(job) {
  const hist = job.history || [];
  const last = hist[hist.length - 1];
  return job.state === 'dead' && last && byDependency(last) ? (last.parent || (/^job (.+) it depends on failed$/.exec(last.message || '') || [])[1] || null) : null;
}

// A node's advice (the API's "retry": the dead jobs to retry for it to run,
// root causes first) as "retry A and B", the jids linking to their pages;
// "retry it" when it is self alone.
function retryAdvice(retry, self) {
  if (!retry || !retry.length) return null;
  if (retry.length === 1 && retry[0] === self) return 'retry it';
  return ['retry ', retry.map((j, i) => [i === 0 ? '' : i === retry.length - 1 ? ' and ' : ', ',
    h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(j)}, j)])];
}

// A tracked job's progress record (GET /api/track/JID, TRACK GET's JSON), or
// null for an untracked job or a server that refuses tracking.
async function trackOf(jid) {
  try {
    const t = await api('GET', 'track/' + encodeURIComponent(jid));
    return t && t.state && t.state !== 'unknown' ? t : null;
  } catch (e) { return null; }
}

// The progress panel of a tracked job: a bar with the percent, the last
// description, the tracking state and when it was last updated.
function fillProgress(box, t) {
  const pct = Number.isInteger(t.percent) ? Math.max(0, Math.min(100, t.percent)) : null;
  box.append(h('h2', {}, 'Progress'),
    h('div', {class: 'progress', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100',
      'aria-valuenow': pct === null ? '' : String(pct), 'data-testid': 'job-progress-bar'},
      h('div', {class: 'progress-fill ' + t.state, style: `width:${pct === null ? 0 : pct}%`})),
    h('div', {class: 'muted', 'data-testid': 'job-progress-text'},
      pct === null ? 'no percent reported' : `${pct}%`, t.desc ? ' · ' + t.desc : '',
      ' · ', t.state, t.updated_at ? ' · updated ' + fmtTime(t.updated_at) : ''));
  box.hidden = false;
}

// A unique job's lock: for how long, until what, and whether it holds it now.
function uniqueText(u) {
  return [`for ${fmtDur(u.unique_for * 1000)}, until ${u.unique_until} · `,
    u.locked ? h('span', {'data-testid': 'job-lock', 'data-locked': 'true'}, pill('lock held', 'ok'), ' until ', fmtTime(u.lock_until))
      : h('span', {'data-testid': 'job-lock', 'data-locked': 'false'}, pill('lock not held', 'waiting'),
        u.lock_until ? ' (ran out ' + fmtTime(u.lock_until) + ')' : '')];
}

async function jobPage(jid) {
  show(h('h1', {}, 'Job ', h('span', {class: 'mono'}, jid)), h('div', {class: 'panel muted'}, 'Loading…'));
  let job;
  try { job = await api('GET', 'job/' + encodeURIComponent(jid)); }
  catch (e) { show(h('h1', {}, 'Job ', h('span', {class: 'mono'}, jid)), h('div', {class: 'panel error-box', 'data-testid': 'job-error'}, e.message)); return; }
  const mutable = ['scheduled', 'retries', 'dead'].includes(job.state);
  const action = (name, cls) => h('button', {class: cls || '', 'data-testid': 'job-' + name, onclick: async () => {
    if (name !== 'retry' && !confirm(`${name} job ${jid}?`)) return;
    try {
      const r = await api('POST', `job/${encodeURIComponent(jid)}/${name}`);
      toast(`Job ${jid}: ${name} (now ${r.state || 'gone'})`);
      if (r.state) jobPage(jid); else location.hash = '#/' + job.state;
    } catch (e) { toast(e.message, true); }
  }}, name === 'retry' ? 'Retry now' : name[0].toUpperCase() + name.slice(1));
  const hist = job.history || [];
  const failed = hist.filter((a) => !byDependency(a)).length;
  const sch = job.schedule || {};
  const wfLink = h('a', {href: '#/workflow/' + encodeURIComponent(jid), class: 'wf-link', 'data-testid': 'job-workflow', hidden: true}, 'workflow');
  // a blocked job, or one killed by its dependency: what to retry for it to run
  const killer = killedBy(job);
  const advice = h('span', {'data-testid': 'job-retry-advice'});
  workflowOf(job).then((g) => {
    wfLink.hidden = !g;
    const node = g && g.nodes.find((n) => n.jid === jid);
    const what = node && retryAdvice(node.retry, jid);
    if (what) fill(advice, ' — to run this job, ', h('span', {}, what));
  });
  const progressBox = h('div', {class: 'panel', 'data-testid': 'job-progress', hidden: true});
  trackOf(jid).then((t) => { if (t) fillProgress(progressBox, t); });
  const custom = (job.job && job.job.custom) || {};
  const bid = typeof custom.bid === 'string' && custom.bid ? custom.bid : typeof custom._bid === 'string' && custom._bid ? custom._bid : null;
  const batchLink = bid ? h('a', {href: '#/batch/' + encodeURIComponent(bid), class: 'wf-link', 'data-testid': 'job-batch',
    title: custom.bid ? 'member of batch ' + bid : 'callback of batch ' + bid}, custom.bid ? 'batch' : 'batch (callback)') : null;
  show(
    h('h1', {}, job.jobtype, ' ', pill(job.state), ' ', h('span', {class: 'muted mono', style: 'font-size:13px'}, job.jid), ' ', wfLink, batchLink ? [' ', batchLink] : null),
    mutable ? h('div', {class: 'toolbar'}, action('retry', 'primary'), job.state !== 'dead' ? action('kill') : null, action('discard', 'danger')) : null,
    progressBox,
    h('div', {class: 'row'},
      h('div', {class: 'panel grow'}, h('h2', {}, 'Job'), h('dl', {class: 'kv'},
        h('dt', {}, 'queue'), h('dd', {}, job.queue),
        job.group ? [h('dt', {}, 'group'), h('dd', {'data-testid': 'job-group'}, h('a', {href: `#/groups?queue=${encodeURIComponent(job.queue)}`}, job.group))] : null,
        h('dt', {}, 'state'), h('dd', {'data-testid': 'job-state'}, job.state),
        job.held ? [h('dt', {}, 'held back'), h('dd', {'data-testid': 'job-held'}, job.held.detail,
          job.held.until ? [' (', rel(job.held.until), ')'] : null)] : null,
        h('dt', {}, 'attempts'), h('dd', {'data-testid': 'job-attempts'}, job.attempts),
        h('dt', {}, 'priority'), h('dd', {}, job.priority),
        h('dt', {}, 'created'), h('dd', {}, fmtTime(job.created_at)),
        job.unique ? [h('dt', {}, 'unique'), h('dd', {'data-testid': 'job-unique'}, uniqueText(job.unique))] : null,
        job.expiry ? [h('dt', {}, 'expires'), h('dd', {'data-testid': 'job-expiry'}, fmtTime(job.expiry), ' (', rel(job.expiry), ')')] : null,
        job.next_at ? [h('dt', {}, 'next attempt'), h('dd', {}, fmtTime(job.next_at), ' (', rel(job.next_at), ')')] : null,
        job.reserved_until ? [h('dt', {}, 'reserved until'), h('dd', {}, fmtTime(job.reserved_until), job.wid ? ' by ' + job.wid : '')] : null,
        job.expires_at ? [h('dt', {}, 'deleted after'), h('dd', {}, fmtTime(job.expires_at))] : null,
        job.waits_for ? [h('dt', {}, 'waits for'), h('dd', {'data-testid': 'job-waits-for'}, job.waits_for.length ? job.waits_for.map((p, i) =>
          [i ? ', ' : '', h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(p)}, p)]) : '–')] : null,
        job.blocked_by ? [h('dt', {}, 'blocked by'), h('dd', {class: 'err', 'data-testid': 'job-blocked-by'},
          h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(job.blocked_by)}, job.blocked_by), ' (dead)', advice)] : null,
        killer ? [h('dt', {}, 'killed by'), h('dd', {class: 'err', 'data-testid': 'job-killed-by'},
          h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(killer)}, killer), ' (its parent died)', advice)] : null,
        h('dt', {}, 'args'), h('dd', {}, h('pre', {}, JSON.stringify(job.args, null, 2))))),
      h('div', {class: 'panel grow'}, h('h2', {}, 'Retry policy'),
        sch.description ? [h('div', {class: 'muted'}, 'from: ', sch.layer), h('pre', {}, sch.description)] : h('div', {class: 'error-box'}, sch.error || 'no policy'))),
    h('div', {class: 'panel'}, h('h2', {'data-testid': 'attempts-title'}, failed ? `Attempts (${failed} failed)` : 'Attempts'), timeline(job),
      hist.length ? h('ol', {class: 'attempts', 'data-testid': 'attempts'}, hist.slice().reverse().map((a) => h('li', {class: a.outcome},
        h('div', {}, h('b', {}, byDependency(a) ? 'Killed by a dependency (no attempt)' : `Attempt ${a.attempt}`), ' ',
          h('span', {class: 'err'}, a.errtype), ' ', h('span', {class: 'when'}, fmtTime(a.at))),
        h('div', {}, a.message),
        h('div', {class: 'when'}, a.outcome === 'retry' ? `→ retry after ${fmtDur(a.delay_ms)} (${a.source})` : `→ ${a.outcome} (${a.reason})`),
        a.backtrace && a.backtrace.length ? h('pre', {}, a.backtrace.join('\n')) : null)))
        : h('div', {class: 'empty'}, 'No failed attempts.')),
    sch.attempts ? h('div', {class: 'panel'}, h('h2', {}, 'Full schedule if every attempt fails'),
      h('div', {class: 'muted'}, `${sch.attempts.length} step(s), then ${sch.final} (${sch.reason})`),
      scheduleChart(sch), h('details', {}, h('summary', {}, 'table'), scheduleTable(sch))) : null,
    h('div', {class: 'panel'}, h('details', {}, h('summary', {}, 'Raw job JSON'), h('pre', {}, JSON.stringify(job.job, null, 2)))));
}

// --- workflow ----------------------------------------------------------------

const WF_COLOR = {
  waiting: '#8a93a6', blocked: '#b5651d', scheduled: '#7b4fd6', enqueued: '#2a9fb5', working: '#3457d5',
  retries: '#c77700', dead: '#d33b3b', succeeded: '#1f9d55', unknown: '#c8cedc',
};

const WF_STATE_NOTE = {succeeded: 'ACKed, known by its record for [workflows] succeeded_ttl',
  unknown: 'no longer known: its record expired, or it was deleted without succeeding'};

// The graph of /api/workflow/JID (docs/http.md) as SVG: one column per layer
// (the API's longest path from a root), nodes in the order the API gives them,
// an edge from each parent's right side to its child's left side. A node's
// first line is its job type (its jid for a job known only by its record or
// not at all), its second its state, whole, then its tries and jid, each cut
// with an ellipsis to fit; the tooltip has them all.
function workflowGraph(g, focus) {
  const NW = 200, NH = 50, GX = 80, GY = 18, M = 16, PAD = 10;
  const cols = [];
  for (const n of g.nodes) (cols[n.layer] = cols[n.layer] || []).push(n);
  const at = {};
  cols.forEach((col, li) => col.forEach((n, i) => { at[n.jid] = {x: M + li * (NW + GX), y: M + i * (NH + GY)}; }));
  const rows = Math.max(1, ...cols.map((c) => (c ? c.length : 0)));
  const W = M * 2 + Math.max(1, cols.length) * NW + Math.max(0, cols.length - 1) * GX;
  const H = M * 2 + rows * NH + (rows - 1) * GY;
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'wf-graph', role: 'img',
    'aria-label': 'workflow graph', 'data-testid': 'workflow-graph'});
  svg.append(s('defs', {}, s('marker', {id: 'wf-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto'},
    s('path', {d: 'M0,0 L10,5 L0,10 z', fill: '#9aa5c2'}))));
  const edges = s('g', {class: 'wf-edges'});
  for (const e of g.edges) {
    const p = at[e.parent], c = at[e.child];
    if (!p || !c) continue;
    const x1 = p.x + NW, y1 = p.y + NH / 2, x2 = c.x, y2 = c.y + NH / 2, mx = (x1 + x2) / 2;
    edges.append(s('path', {class: 'wf-edge', d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
      'data-parent': e.parent, 'data-child': e.child, 'marker-end': 'url(#wf-arrow)'}));
  }
  svg.append(edges);
  for (const n of g.nodes) {
    const {x, y} = at[n.jid];
    const color = WF_COLOR[n.state] || WF_COLOR.unknown;
    const cls = `wf-node state-${n.state}` + (n.blocking ? ' wf-blocking' : '') + (n.jid === focus ? ' wf-focus' : '');
    const room = NW - 2 * PAD;
    const title = n.jobtype ? clipText(n.jobtype, room, 'bold 13px') : clipText(n.jid, room, 'bold 13px', true);
    let sub = n.state + (n.attempts ? ` · ${n.attempts} ${n.attempts === 1 ? 'try' : 'tries'}` : '');
    if (n.jobtype) sub += ' · ' + clipText(n.jid, Math.max(room - textWidth(sub + ' · '), 24), '11px', true);
    const box = [
      s('rect', {x, y, width: NW, height: NH, rx: 7, fill: color}),
      s('text', {x: x + PAD, y: y + 19, class: 'wf-title'}, title),
      s('text', {x: x + PAD, y: y + 37, class: 'wf-sub'}, sub),
      s('title', {}, (n.jobtype ? n.jobtype + '\n' : '') + `${n.jid}: ${n.state}` +
        (WF_STATE_NOTE[n.state] ? ` (${WF_STATE_NOTE[n.state]})` : '') +
        (n.attempts ? `, ${n.attempts} ${n.attempts === 1 ? 'try' : 'tries'}` : '') +
        (n.blocked_by ? `, blocked by ${n.blocked_by}` : '') +
        (n.waits_for && n.waits_for.length ? `, waits for ${n.waits_for.join(', ')}` : '') +
        (n.killed_by ? `, killed when its parent ${n.killed_by} died` : '') +
        (n.blocking ? ', blocks its children' : '') +
        (n.retry && n.retry.length ? ` (to run it, retry ${n.retry.join(', ')})` : '')),
    ];
    const known = n.state !== 'succeeded' && n.state !== 'unknown'; // a row to show
    svg.append(s('g', {class: cls, 'data-jid': n.jid, 'data-state': n.state},
      known ? s('a', {href: '#/job/' + encodeURIComponent(n.jid)}, box) : box));
  }
  return svg;
}

function workflowPage(jid) {
  const title = () => h('h1', {}, 'Workflow of ', h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(jid)}, jid));
  show(title(), h('div', {class: 'panel muted'}, 'Loading…'));
  every(3000, async () => {
    let g;
    try { g = await api('GET', 'workflow/' + encodeURIComponent(jid)); }
    catch (e) { show(title(), h('div', {class: 'panel error-box', 'data-testid': 'workflow-error'}, e.message)); return; }
    // each dead job that blocks others or was killed by its dependency, with
    // the jobs that actually have to be retried
    const stuck = g.nodes.filter((n) => n.state === 'dead' && (n.blocking || n.killed_by));
    const counts = {};
    for (const n of g.nodes) counts[n.state] = (counts[n.state] || 0) + 1;
    show(title(),
      h('div', {class: 'panel'},
        h('div', {class: 'muted', 'data-testid': 'workflow-summary'}, `${g.nodes.length} job(s), ${g.edges.length} edge(s) · `,
          Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ')),
        g.truncated ? h('div', {class: 'error-box', 'data-testid': 'workflow-truncated'}, `Showing the first ${g.max_nodes} jobs found: the workflow is bigger.`) : null,
        stuck.length ? h('ul', {class: 'wf-alert', 'data-testid': 'workflow-blocking'}, stuck.map((n) => h('li', {'data-jid': n.jid},
          h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(n.jid)}, n.jid),
          n.killed_by ? [' was killed when its parent ', h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(n.killed_by)}, n.killed_by), ' died']
            : ' is dead',
          n.blocking ? [n.killed_by ? ', and' : ' and', ' blocks its children: to unblock them, '] : ': to run it, ',
          retryAdvice(n.retry, n.jid), '.'))) : null,
        legend(Object.entries(WF_COLOR)),
        h('div', {class: 'legend', 'data-testid': 'wf-outlines'},
          h('span', {}, h('i', {class: 'wf-key wf-key-blocking'}), 'dashed red outline: dead, and blocks its children'),
          h('span', {}, h('i', {class: 'wf-key wf-key-focus'}), 'thick outline: ', h('span', {class: 'mono'}, jid), ', this page\'s job'),
          h('span', {}, 'succeeded: ', WF_STATE_NOTE.succeeded, '; unknown: ', WF_STATE_NOTE.unknown)),
        h('div', {class: 'wf-scroll'}, workflowGraph(g, jid))));
  });
}

// --- batches -----------------------------------------------------------------

// A batch's progress as SVG: done (total - pending) in green from the left,
// then the failed members (still pending) in red; the text says both.
function batchProgress(b, W) {
  W = W || 220;
  const H = 16, total = b.total || 0, done = Math.max(0, total - b.pending);
  const wDone = total ? Math.round(W * done / total) : 0;
  const wFailed = total ? Math.round(W * b.failed / total) : 0;
  const text = `${fmtN(done)} / ${fmtN(total)} done` + (b.failed ? `, ${fmtN(b.failed)} failed` : '');
  return h('span', {class: 'bp', 'data-testid': 'batch-progress', 'data-done': done, 'data-total': total, 'data-failed': b.failed},
    s('svg', {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'bp-bar', role: 'img', 'aria-label': text},
      s('rect', {class: 'bp-track', x: 0, y: 0, width: W, height: H, rx: 4}),
      s('rect', {class: 'bp-done', x: 0, y: 0, width: wDone, height: H, rx: 4}),
      s('rect', {class: 'bp-failed', x: wDone, y: 0, width: Math.min(wFailed, W - wDone), height: H})),
    h('span', {class: 'bp-text'}, text));
}

// A callback's state ("", "1" enqueued, "2" ACKed) as a pill.
function cbPill(st) {
  return st === '2' ? pill('done', 'ok') : st === '1' ? pill('enqueued', 'enqueued') : pill('not yet', 'waiting');
}

const bidLink = (bid) => h('a', {class: 'mono', href: '#/batch/' + encodeURIComponent(bid)}, bid);

function batchesPage(params) {
  const all = params.get('all') === '1';
  const offset = Math.max(0, parseInt(params.get('offset') || '0', 10) || 0);
  const box = h('div', {class: 'panel'}, h('div', {class: 'muted'}, 'Loading…'));
  const go = (o, a) => { location.hash = `#/batches?offset=${o}` + (a ? '&all=1' : ''); };
  show(h('h1', {}, 'Batches'),
    h('div', {class: 'toolbar'}, h('label', {}, h('input', {type: 'checkbox', 'data-testid': 'batches-all', checked: all,
      onchange: (ev) => go(0, ev.target.checked)}), ' also finished batches')),
    box);
  every(3000, async () => {
    let r;
    try { r = await api('GET', `batches?state=${all ? 'all' : 'open'}&offset=${offset}&limit=${PAGE}`); }
    catch (e) { fill(box, h('div', {class: 'error-box'}, e.message)); return; }
    if (!r.batches.length) { fill(box, h('div', {class: 'empty', 'data-testid': 'batches-empty'}, all ? 'No batches.' : 'No open batches.')); return; }
    fill(box,
      h('table', {'data-testid': 'batches'},
        h('thead', {}, h('tr', {}, h('th', {}, 'batch'), h('th', {}, 'description'), h('th', {}, 'progress'),
          h('th', {}, 'complete'), h('th', {}, 'success'), h('th', {}, 'created'), h('th', {}, 'parent'))),
        h('tbody', {}, r.batches.map((b) => h('tr', {'data-bid': b.bid, 'data-testid': 'batch-row'},
          h('td', {}, bidLink(b.bid), b.finished_at ? [' ', pill('finished', 'ok')] : !b.committed ? [' ', pill('new', 'waiting')] : null),
          h('td', {}, b.description || h('span', {class: 'muted'}, '–')),
          h('td', {}, batchProgress(b)),
          h('td', {}, cbPill(b.complete_st)), h('td', {}, cbPill(b.success_st)),
          h('td', {}, rel(b.created_at)),
          h('td', {}, b.parent_bid ? bidLink(b.parent_bid) : h('span', {class: 'muted'}, '–')))))),
      h('div', {class: 'toolbar', style: 'margin-top:8px'},
        h('span', {class: 'muted', 'data-testid': 'batches-count'}, `${offset + 1}–${offset + r.batches.length} of ${fmtN(r.total)}`),
        offset > 0 ? h('button', {class: 'small', onclick: () => go(Math.max(0, offset - PAGE), all)}, '← Newer') : null,
        offset + r.batches.length < r.total ? h('button', {class: 'small', onclick: () => go(offset + PAGE, all)}, 'Older →') : null));
  });
}

function batchPage(bid) {
  const title = () => h('h1', {}, 'Batch ', h('span', {class: 'mono'}, bid));
  show(title(), h('div', {class: 'panel muted'}, 'Loading…'));
  every(3000, async () => {
    let b;
    try { b = await api('GET', 'batch/' + encodeURIComponent(bid)); }
    catch (e) { show(title(), h('div', {class: 'panel error-box', 'data-testid': 'batch-error'}, e.message)); return; }
    const done = b.total - b.pending;
    const card = (n, l, cls, id) => h('div', {class: 'card ' + (cls || '')}, h('div', {class: 'n', 'data-testid': id}, fmtN(n)), h('div', {class: 'l'}, l));
    show(
      h('h1', {}, 'Batch ', h('span', {class: 'mono'}, b.bid), ' ',
        pill(b.finished_at ? 'finished' : b.committed ? 'open' : 'new', b.finished_at ? 'ok' : b.committed ? 'enqueued' : 'waiting')),
      h('div', {class: 'cards'},
        card(b.total, 'members', '', 'batch-total'), card(done, 'done', '', 'batch-done'),
        card(b.pending, 'pending', '', 'batch-pending'), card(b.failed, 'failed', b.failed ? 'bad' : '', 'batch-failed')),
      h('div', {class: 'row'},
        h('div', {class: 'panel grow'}, h('h2', {}, 'Batch'), batchProgress(b, 320), h('dl', {class: 'kv', style: 'margin-top:10px'},
          h('dt', {}, 'description'), h('dd', {}, b.description || '–'),
          h('dt', {}, 'created'), h('dd', {}, fmtTime(b.created_at)),
          h('dt', {}, 'finished'), h('dd', {}, b.finished_at ? fmtTime(b.finished_at) : '–'),
          h('dt', {}, 'committed'), h('dd', {}, b.committed ? 'yes' : 'no (members may still be added)'),
          h('dt', {}, 'parent'), h('dd', {'data-testid': 'batch-parent'}, b.parent_bid ? bidLink(b.parent_bid) : '–'),
          h('dt', {}, 'children'), h('dd', {'data-testid': 'batch-children'}, b.children.length ? b.children.map((c, i) => [i ? ', ' : '', bidLink(c)]) : '–'))),
        h('div', {class: 'panel grow'}, h('h2', {}, 'Callbacks'),
          b.callbacks.length ? h('table', {'data-testid': 'batch-callbacks'},
            h('thead', {}, h('tr', {}, h('th', {}, 'callback'), h('th', {}, 'state'), h('th', {}, 'job'))),
            h('tbody', {}, b.callbacks.map((c) => h('tr', {'data-kind': c.kind, 'data-st': c.st},
              h('td', {}, c.kind), h('td', {}, cbPill(c.st)),
              h('td', {}, c.jid ? h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(c.jid)}, c.jid) : h('span', {class: 'muted'}, '–'))))))
            : h('div', {class: 'empty'}, 'No callbacks.'))),
      h('div', {class: 'panel'}, h('h2', {}, `Members still stored (${fmtN(b.members.length)})`),
        h('div', {class: 'muted'}, 'Members that succeeded are deleted; the others are listed by jid.'),
        b.truncated ? h('div', {class: 'error-box', 'data-testid': 'batch-truncated'}, `Showing the first ${fmtN(b.max_members)} members.`) : null,
        b.members.length ? h('table', {'data-testid': 'batch-members'},
          h('thead', {}, h('tr', {}, h('th', {}, 'job'), h('th', {}, 'type'), h('th', {}, 'queue'), h('th', {}, 'state'), h('th', {class: 'num'}, 'attempts'))),
          h('tbody', {}, b.members.map((m) => h('tr', {'data-jid': m.jid},
            h('td', {}, h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(m.jid)}, m.jid)),
            h('td', {}, m.jobtype || '–'), h('td', {}, m.queue), h('td', {}, pill(m.state)),
            h('td', {class: 'num'}, m.attempts)))))
          : h('div', {class: 'empty'}, 'No member stored.')));
  });
}

// --- cron and throttles ----------------------------------------------------

const jobLink = (jid) => h('a', {class: 'mono', href: '#/job/' + encodeURIComponent(jid)}, jid);

// GET /api/cron: each [[cron]] entry with its schedule, job, last fired tick
// and next run times.
function cronPage() {
  const box = h('div', {class: 'panel'}, h('div', {class: 'muted'}, 'Loading…'));
  show(h('h1', {}, 'Cron'), box);
  every(5000, async () => {
    let r;
    try { r = await api('GET', 'cron?count=5'); }
    catch (e) { fill(box, h('div', {class: 'error-box'}, e.message)); return; }
    if (!r.entries.length) { fill(box, h('div', {class: 'empty', 'data-testid': 'cron-empty'}, 'No [[cron]] entries configured.')); return; }
    fill(box,
      h('div', {class: 'muted', style: 'margin-bottom:8px'}, `${fmtN(r.fired)} job(s) enqueued by cron since the server started · times in UTC`),
      h('table', {'data-testid': 'cron'},
        h('thead', {}, h('tr', {}, h('th', {}, 'entry'), h('th', {}, 'schedule'), h('th', {}, 'job'), h('th', {}, 'missed'),
          h('th', {}, 'last fired'), h('th', {}, 'next runs'))),
        h('tbody', {}, r.entries.map((e) => h('tr', {'data-name': e.name, 'data-testid': 'cron-row'},
          h('td', {}, h('b', {}, e.name)),
          h('td', {}, h('code', {'data-testid': 'cron-schedule'}, e.schedule), h('div', {class: 'muted', 'data-testid': 'cron-tz'}, e.timezone)),
          h('td', {}, e.jobtype, h('div', {class: 'muted'}, 'queue ', h('a', {href: '#/enqueued?queue=' + encodeURIComponent(e.queue)}, e.queue))),
          h('td', {}, e.missed === 'run_once' ? 'one catch-up run' : 'skipped'),
          h('td', {'data-testid': 'cron-last'}, e.last ? [rel(e.last), h('div', {class: 'muted'}, jobLink(e.last_jid))] : h('span', {class: 'muted'}, 'never')),
          h('td', {}, e.next.length ? h('ol', {class: 'next-runs', 'data-testid': 'cron-next'}, e.next.map((t, i) => h('li', {},
            fmtTime(t), i === 0 ? [' (', rel(t), ')'] : null)))
            : h('span', {class: 'muted'}, 'never (no such date within ten years)')))))));
  });
}

// A throttle's slots as a bar: in use out of the limit (a rate alone: no bar).
function slotsBar(t) {
  const W = 160, H = 14, used = t.in_use === null ? 0 : t.in_use;
  if (!t.concurrency)
    return h('span', {class: 'bp-text', 'data-testid': 'throttle-slots'}, t.in_use === null ? 'not reported' : `${fmtN(used)} working, no limit`);
  const w = Math.round(W * Math.min(used, t.concurrency) / t.concurrency);
  const text = t.in_use === null ? 'not reported' : `${fmtN(used)} / ${fmtN(t.concurrency)}`;
  return h('span', {class: 'bp', 'data-testid': 'throttle-slots', 'data-in-use': t.in_use === null ? '' : String(used), 'data-limit': t.concurrency},
    s('svg', {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'bp-bar', role: 'img', 'aria-label': text},
      s('rect', {class: 'bp-track', x: 0, y: 0, width: W, height: H, rx: 4}),
      s('rect', {class: used >= t.concurrency ? 'bp-failed' : 'bp-done', x: 0, y: 0, width: w, height: H, rx: 4})),
    h('span', {class: 'bp-text'}, text));
}

// GET /api/throttles: per throttled queue its limit, timeout and slots in use.
function throttlesPage() {
  const box = h('div', {class: 'panel'}, h('div', {class: 'muted'}, 'Loading…'));
  show(h('h1', {}, 'Throttles'), box);
  every(3000, async () => {
    let r;
    try { r = await api('GET', 'throttles'); }
    catch (e) { fill(box, h('div', {class: 'error-box'}, e.message)); return; }
    if (!r.throttles.length) { fill(box, h('div', {class: 'empty', 'data-testid': 'throttles-empty'}, 'No [throttles] configured.')); return; }
    fill(box, h('table', {'data-testid': 'throttles'},
      h('thead', {}, h('tr', {}, h('th', {}, 'queue'), h('th', {}, 'slots in use'), h('th', {class: 'num'}, 'limit'),
        h('th', {class: 'num'}, 'slot timeout'), h('th', {class: 'num'}, 'waiting'), h('th', {}, 'state'))),
      h('tbody', {}, r.throttles.map((t) => h('tr', {'data-queue': t.queue, 'data-testid': 'throttle-row'},
        h('td', {}, h('a', {href: '#/enqueued?queue=' + encodeURIComponent(t.queue)}, t.queue)),
        h('td', {}, slotsBar(t)),
        h('td', {class: 'num', 'data-testid': 'throttle-limit'}, (t.concurrency ? fmtN(t.concurrency) : '—') +
          (t.rate ? ` · ${fmtN(t.rate)} per ${fmtDur(t.period_s * 1000)}${t.burst ? ' +' + fmtN(t.burst) : ''}` : '')),
        h('td', {class: 'num', 'data-testid': 'throttle-timeout'}, t.timeout_s ? fmtDur(t.timeout_s * 1000) : 'none'),
        h('td', {class: 'num'}, fmtN(t.size)),
        h('td', {}, t.paused ? pill('paused') : t.concurrency && t.in_use !== null && t.in_use >= t.concurrency ? pill('full', 'retries') : pill('open', 'ok')))))));
  });
}

// --- groups (flow control) -------------------------------------------------

// A group's or a queue's limits in words: "2 at once · 100 per 1m +10".
function limitsText(l) {
  const parts = [];
  if (l.concurrency) parts.push(`${fmtN(l.concurrency)} at once`);
  if (l.rate) parts.push(`${fmtN(l.rate)} per ${fmtDur(l.period * 1000)}${l.burst ? ' +' + fmtN(l.burst) : ''}`);
  return parts.length ? parts.join(' · ') : 'no limit';
}

// Where each limit comes from, for a tooltip.
const limitsFrom = (l) => Object.entries(l.from || {}).map(([k, v]) => `${k}: ${v}`).join(', ');

// A group's state as a pill and a sentence (who holds it back, until when).
function groupState(g) {
  if (g.held === 'paused') return [pill('paused', 'dead'), ' until ', fmtTime(g.paused_until), ' (', rel(g.paused_until), ')', g.reason ? h('div', {class: 'muted', 'data-testid': 'group-reason'}, g.reason) : null];
  if (g.held === 'concurrency') return [pill('held', 'retries'), ` runs ${fmtN(g.working)} of ${fmtN(g.limits.concurrency)}`];
  if (g.held === 'rate') return [pill('held', 'retries'), ' rate: next start ', rel(g.held_until)];
  return g.ready || g.working ? pill('active', 'ok') : h('span', {class: 'muted'}, 'idle');
}

// GET /api/groups and /api/groups/Q: every queue's groups counted, then a
// queue's groups with Set / Pause / Resume.
function groupsPage(params) {
  const queue = params.get('queue'), state = params.get('state') || 'all';
  const box = h('div', {class: 'panel'}, h('div', {class: 'muted'}, 'Loading…'));
  const sums = h('div', {class: 'panel'});
  show(h('h1', {}, 'Groups', queue ? [' · ', h('span', {class: 'mono'}, queue)] : null), sums, queue ? box : null);
  const open = {}; // group -> 'set' | 'pause' while its form is open
  const act = async (g, action, body) => {
    try {
      await api('POST', `groups/${encodeURIComponent(queue)}/${encodeURIComponent(g)}/${action}`, body || {});
      toast(`group ${g}: ${action === 'set' ? 'limits set' : action === 'pause' ? 'paused' : 'resumed'}`);
      delete open[g];
      load();
    } catch (e) { toast(e.message, true); }
  };
  const num = (name, v) => h('input', {type: 'number', min: 0, name, placeholder: name, value: v === undefined ? '' : v, style: 'width:7em'});
  function form(g) {
    if (open[g.group] === 'set') {
      const o = g.override || {};
      const f = h('form', {class: 'toolbar', 'data-testid': 'group-set-form'},
        num('concurrency', o.concurrency), num('rate', o.rate),
        h('input', {name: 'period', placeholder: 'period (1m)', value: o.period ? o.period + 's' : '', style: 'width:8em'}),
        num('burst', o.burst),
        h('button', {class: 'primary', type: 'submit'}, 'Save'),
        h('button', {type: 'button', onclick: () => act(g.group, 'set', {})}, 'Clear override'));
      f.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const body = {};
        for (const k of ['concurrency', 'rate', 'burst']) if (f.elements[k].value !== '') body[k] = Number(f.elements[k].value);
        if (f.elements.period.value) body.period = f.elements.period.value;
        act(g.group, 'set', body);
      });
      return f;
    }
    if (open[g.group] === 'pause') {
      const f = h('form', {class: 'toolbar', 'data-testid': 'group-pause-form'},
        h('input', {name: 'until', placeholder: 'seconds or RFC 3339', value: '300', style: 'width:12em'}),
        h('input', {name: 'reason', placeholder: 'reason (upstream 429)', style: 'width:16em'}),
        h('button', {class: 'primary', type: 'submit'}, 'Pause'));
      f.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const u = f.elements.until.value.trim();
        act(g.group, 'pause', {until: /^[0-9.]+$/.test(u) ? Number(u) : u, reason: f.elements.reason.value || undefined});
      });
      return f;
    }
    return null;
  }
  const toggle = (g, what) => { open[g] = open[g] === what ? undefined : what; load(); };
  async function load() {
    let r;
    try { r = await api('GET', 'groups'); }
    catch (e) { fill(sums, h('div', {class: 'error-box'}, e.message)); return; }
    fill(sums, r.queues.length ? h('table', {'data-testid': 'group-queues'},
      h('thead', {}, h('tr', {}, h('th', {}, 'queue'), h('th', {class: 'num'}, 'groups'), h('th', {class: 'num'}, 'active'),
        h('th', {class: 'num'}, 'held: concurrency'), h('th', {class: 'num'}, 'held: rate'), h('th', {class: 'num'}, 'paused'), h('th', {}, 'limits per group'))),
      h('tbody', {}, r.queues.map((q) => h('tr', {'data-queue': q.queue, 'data-testid': 'group-queue-row', class: q.queue === queue ? 'selected' : ''},
        h('td', {}, h('a', {href: '#/groups?queue=' + encodeURIComponent(q.queue)}, q.queue)),
        h('td', {class: 'num'}, fmtN(q.total)), h('td', {class: 'num'}, fmtN(q.active)),
        h('td', {class: 'num'}, fmtN(q.held.concurrency)), h('td', {class: 'num'}, fmtN(q.held.rate)),
        h('td', {class: 'num'}, fmtN(q.paused)),
        h('td', {title: limitsFrom(q.limits)}, limitsText(q.limits))))))
      : h('div', {class: 'empty', 'data-testid': 'groups-empty'}, 'No groups yet: jobs name theirs in custom.group, limits come from [groups] (docs/configuration.md).'));
    if (!queue) return;
    let g;
    try { g = await api('GET', `groups/${encodeURIComponent(queue)}?state=${state}&limit=200`); }
    catch (e) { fill(box, h('div', {class: 'error-box'}, e.message)); return; }
    const filter = h('select', {'data-testid': 'group-state', onchange: (ev) => { location.hash = `#/groups?queue=${encodeURIComponent(queue)}&state=${ev.target.value}`; }},
      ['all', 'active', 'held', 'paused'].map((k) => h('option', {value: k, selected: k === state}, k)));
    fill(box,
      h('div', {class: 'toolbar'}, 'show', filter, h('span', {class: 'muted'}, `${fmtN(g.total)} group(s)`)),
      g.groups.length ? h('table', {'data-testid': 'groups'},
        h('thead', {}, h('tr', {}, h('th', {}, 'group'), h('th', {class: 'num'}, 'ready'), h('th', {class: 'num'}, 'working'),
          h('th', {}, 'limits'), h('th', {}, 'state'), h('th', {}, ''))),
        h('tbody', {}, g.groups.map((x) => [h('tr', {'data-group': x.group, 'data-testid': 'group-row'},
          h('td', {}, h('a', {href: `#/enqueued?queue=${encodeURIComponent(queue)}&group=${encodeURIComponent(x.group)}`}, h('b', {}, x.group))),
          h('td', {class: 'num'}, fmtN(x.ready)),
          h('td', {class: 'num'}, x.limits.concurrency ? `${fmtN(x.working)} / ${fmtN(x.limits.concurrency)}` : fmtN(x.working)),
          h('td', {title: limitsFrom(x.limits), 'data-testid': 'group-limits'}, limitsText(x.limits), x.override ? h('div', {class: 'muted'}, 'override') : null,
            x.next_start_at && x.held !== 'rate' ? h('div', {class: 'muted'}, 'next start ', rel(x.next_start_at)) : null),
          h('td', {'data-testid': 'group-state'}, groupState(x)),
          h('td', {}, h('button', {class: 'small', 'data-testid': 'group-set', onclick: () => toggle(x.group, 'set')}, 'Set'), ' ',
            x.held === 'paused' ? h('button', {class: 'small', 'data-testid': 'group-resume', onclick: () => act(x.group, 'resume')}, 'Resume')
              : h('button', {class: 'small', 'data-testid': 'group-pause', onclick: () => toggle(x.group, 'pause')}, 'Pause'))),
          open[x.group] ? h('tr', {class: 'form-row'}, h('td', {colspan: 6}, form(x))) : null])))
        : h('div', {class: 'empty'}, 'No group in this state.'));
  }
  every(3000, () => { if (!Object.keys(open).some((k) => open[k])) load(); });
}

// --- workers ---------------------------------------------------------------

function workers() {
  const box = h('div', {class: 'panel'});
  const signal = async (action, wid) => {
    try {
      const r = await api('POST', 'workers/' + action, wid ? {wid} : {});
      toast(`${action}: ${r.workers} worker(s) told at their next heartbeat`);
    } catch (e) { toast(e.message, true); }
    load();
  };
  show(h('h1', {}, 'Workers'), h('div', {class: 'toolbar'},
    h('button', {onclick: () => signal('quiet')}, 'Quiet all'),
    h('button', {class: 'danger', onclick: () => confirm('Terminate every worker?') && signal('terminate')}, 'Terminate all')), box);
  async function load() {
    try {
      const ws = (await api('GET', 'workers')).workers;
      box.replaceChildren(ws.length ? h('table', {'data-testid': 'workers'},
        h('thead', {}, h('tr', {}, h('th', {}, 'worker'), h('th', {class: 'num'}, 'connections'), h('th', {}, 'last heartbeat'), h('th', {}, 'signal'), h('th', {}, ''))),
        h('tbody', {}, ws.map((w) => h('tr', {},
          h('td', {class: 'mono'}, w.wid), h('td', {class: 'num'}, w.connections), h('td', {}, rel(w.last_beat)),
          h('td', {}, w.signal === 'none' ? h('span', {class: 'muted'}, '–') : pill(w.signal, 'retries')),
          h('td', {}, h('button', {class: 'small', onclick: () => signal('quiet', w.wid)}, 'Quiet'), ' ',
            h('button', {class: 'small danger', onclick: () => signal('terminate', w.wid)}, 'Terminate'))))))
        : h('div', {class: 'empty'}, 'No workers connected.'));
    } catch (e) { box.replaceChildren(h('div', {class: 'error-box'}, e.message)); }
  }
  every(3000, load);
}

// --- policy simulator ------------------------------------------------------

const PRESETS = {
  temporal: '{\n  "dialect": "temporal",\n  "initial_interval": "1s",\n  "backoff_coefficient": 2.0,\n  "maximum_interval": "100s",\n  "maximum_attempts": 10,\n  "non_retryable_error_types": ["InvalidInput"]\n}',
  faktory: 'faktory:25',
  ftl: '//ftl:retry 10 5s 1m',
  tasker: '{\n  "max_attempts": 5,\n  "backoff": "exponential",\n  "backoff_base_ms": 1000,\n  "max_backoff_ms": 30000\n}',
  tutorial: '{"max_retries": 3}',
};

let simText = PRESETS.temporal;
function simulator() {
  const ta = h('textarea', {'data-testid': 'policy', spellcheck: 'false', 'aria-label': 'policy'});
  ta.value = simText;
  const failures = h('input', {type: 'number', min: 0, max: 1000, placeholder: 'auto', size: 6, 'aria-label': 'failures'});
  const errtype = h('input', {placeholder: 'errtype (optional)', size: 16, 'aria-label': 'errtype'});
  const out = h('div', {'data-testid': 'sim-out'});
  async function run() {
    simText = ta.value;
    const text = ta.value.trim();
    let body;
    let parsed = null;
    try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
    if (failures.value || errtype.value) {
      body = {policy: parsed !== null ? parsed : text};
      if (failures.value) body.failures = parseInt(failures.value, 10);
      if (errtype.value) body.errtype = errtype.value;
    } else {
      body = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : text;
    }
    try {
      const sim = await api('POST', 'policy/simulate', body);
      const retries = sim.attempts.filter((a) => a.outcome === 'retry');
      const last = retries.length ? retries[retries.length - 1].at_ms : 0;
      out.replaceChildren(
        h('div', {class: 'cards'},
          h('div', {class: 'card'}, h('div', {class: 'n', 'data-testid': 'sim-executions'}, sim.attempts.length), h('div', {class: 'l'}, 'executions shown')),
          h('div', {class: 'card'}, h('div', {class: 'n'}, retries.length), h('div', {class: 'l'}, 'retries')),
          h('div', {class: 'card'}, h('div', {class: 'n'}, fmtDur(last)), h('div', {class: 'l'}, 'until last retry')),
          h('div', {class: 'card ' + (sim.final === 'dead' ? 'bad' : '')}, h('div', {class: 'n', 'data-testid': 'sim-final'}, sim.final), h('div', {class: 'l'}, sim.reason))),
        h('div', {class: 'panel'}, h('h2', {}, 'Delay before each retry'), scheduleChart(sim),
          legend([['delay', '#3457d5'], ['dead', OUTCOME_COLOR.dead], ['discard', OUTCOME_COLOR.discard], ['catch', OUTCOME_COLOR.catch]])),
        h('div', {class: 'row'},
          h('div', {class: 'panel grow'}, h('h2', {}, 'Schedule'), scheduleTable(sim, 200)),
          h('div', {class: 'panel grow'}, h('h2', {}, 'The policy in words'), h('pre', {}, sim.description),
            (sim.policy.warnings || []).map((w) => h('div', {class: 'error-box'}, '⚠ ' + w)))));
    } catch (e) {
      out.replaceChildren(h('div', {class: 'panel error-box', 'data-testid': 'sim-error'}, e.message));
    }
  }
  show(h('h1', {}, 'Policy simulator'),
    h('div', {class: 'panel'},
      h('div', {class: 'muted', style: 'margin-bottom:8px'}, 'Type a retry policy in any dialect (Temporal, Faktory, FTL, tasker-core, the Go tutorial) and see the schedule it gives when every attempt fails.'),
      h('div', {class: 'toolbar'}, 'Examples:', Object.keys(PRESETS).map((k) => h('button', {class: 'small', onclick: () => { ta.value = PRESETS[k]; run(); }}, k))),
      ta,
      h('div', {class: 'toolbar', style: 'margin-top:8px'}, 'failures', failures, errtype,
        h('button', {class: 'primary', 'data-testid': 'simulate', onclick: run}, 'Simulate'),
        h('span', {class: 'muted'}, 'Ctrl+Enter'))),
    out);
  ta.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) run(); });
  run();
}

// --- router and the header's live counts -----------------------------------

function route() {
  leave();
  const {path, params} = parseHash();
  let m;
  let page = 'overview';
  if (path === '/' || path === '') overview();
  else if (path === '/queues') { page = 'queues'; queues(); }
  else if ((m = path.match(/^\/(scheduled|retries|dead|enqueued|working|waiting|blocked)$/))) { page = m[1] === 'blocked' ? 'waiting' : m[1]; jobList(m[1], params); }
  else if ((m = path.match(/^\/job\/(.+)$/))) { page = ''; jobPage(decodeURIComponent(m[1])); }
  else if ((m = path.match(/^\/workflow\/(.+)$/))) { page = ''; workflowPage(decodeURIComponent(m[1])); }
  else if (path === '/batches') { page = 'batches'; batchesPage(params); }
  else if ((m = path.match(/^\/batch\/(.+)$/))) { page = 'batches'; batchPage(decodeURIComponent(m[1])); }
  else if (path === '/cron') { page = 'cron'; cronPage(); }
  else if (path === '/throttles') { page = 'throttles'; throttlesPage(); }
  else if (path === '/groups') { page = 'groups'; groupsPage(params); }
  else if (path === '/workers') { page = 'workers'; workers(); }
  else if (path === '/simulate') { page = 'simulate'; simulator(); }
  else show(h('h1', {}, 'Not found'), h('p', {}, h('a', {href: '#/'}, 'Back to the overview')));
  document.querySelectorAll('#nav a').forEach((a) => a.classList.toggle('active', a.dataset.page === page));
}

async function header() {
  const st = document.getElementById('status');
  try {
    const info = await api('GET', 'info');
    for (const k of ['scheduled', 'retries', 'dead']) document.getElementById('n-' + k).textContent = info.jobs[k] ? fmtN(info.jobs[k]) : '';
    const held = document.getElementById('n-held'), nHeld = (info.jobs.waiting || 0) + (info.jobs.blocked || 0);
    held.textContent = nHeld ? fmtN(nHeld) : '';
    held.classList.toggle('blocked', info.jobs.blocked > 0);
    held.title = `${fmtN(info.jobs.waiting)} waiting, ${fmtN(info.jobs.blocked)} blocked`;
    for (const k of HELD) { const t = document.getElementById('tab-' + k); if (t) t.textContent = info.jobs[k] ? fmtN(info.jobs[k]) : ''; }
    st.textContent = `${info.server.store} · up ${fmtDur(info.server.uptime_s * 1000)} · ${info.server.connections} conn`;
    const ver = document.getElementById('version');
    ver.textContent = 'v' + info.server.version;
    ver.title = `Rebound ${info.server.version}, speaking the work protocol of Faktory ${info.server.faktory_protocol_version}`;
    st.classList.remove('down');
  } catch (e) {
    st.textContent = 'server unreachable';
    st.classList.add('down');
  }
}

window.addEventListener('hashchange', route);
route();
header();
setInterval(header, 3000);
