// A tiny Faktory work-protocol client for seeding the server in browser
// tests: HELLO, then one command at a time (PUSH, FETCH, FAIL, ACK, BEAT).
'use strict';
const net = require('node:net');

class Client {
  static async connect(port, wid) {
    const c = new Client();
    c.sock = net.connect(port, '127.0.0.1');
    c.buf = '';
    c.waiters = [];
    c.sock.on('data', (d) => { c.buf += d.toString('utf8'); c.pump(); });
    c.sock.on('error', (e) => c.waiters.splice(0).forEach((w) => w.reject(e)));
    await c.reply(); // +HI
    const hello = {v: 2};
    if (wid) Object.assign(hello, {wid, hostname: 'browser-test', pid: process.pid, labels: ['test']});
    await c.cmd('HELLO ' + JSON.stringify(hello));
    return c;
  }

  // Parses complete replies off the buffer for the waiting callers.
  pump() {
    while (this.waiters.length) {
      const nl = this.buf.indexOf('\r\n');
      if (nl < 0) return;
      const line = this.buf.slice(0, nl);
      let value, used;
      if (line[0] === '$') {
        const n = parseInt(line.slice(1), 10);
        if (n < 0) { value = null; used = nl + 2; } else {
          if (Buffer.byteLength(this.buf) < nl + 2 + n + 2) return;
          const rest = Buffer.from(this.buf.slice(nl + 2));
          value = rest.subarray(0, n).toString('utf8');
          used = nl + 2 + value.length + 2;
        }
      } else { value = line; used = nl + 2; }
      this.buf = this.buf.slice(used);
      const w = this.waiters.shift();
      if (typeof value === 'string' && value.startsWith('-')) w.reject(new Error(value)); else w.resolve(value);
    }
  }

  reply() { return new Promise((resolve, reject) => { this.waiters.push({resolve, reject}); this.pump(); }); }

  cmd(line) { const p = this.reply(); this.sock.write(line + '\r\n'); return p; }

  push(job) { return this.cmd('PUSH ' + JSON.stringify(job)); }
  async fetch(...queues) { const r = await this.cmd('FETCH ' + queues.join(' ')); return r && JSON.parse(r); }
  fail(jid, errtype, message) { return this.cmd('FAIL ' + JSON.stringify({jid, errtype, message, backtrace: ['worker.js:12 in charge', 'worker.js:40 in run']})); }
  ack(jid) { return this.cmd('ACK ' + JSON.stringify({jid})); }
  close() { this.sock.end(); }
}

module.exports = {Client};
