/* tests/thirdparty/src/worker.js: the Node.js program node.sh runs with and without leek.
 *
 * The main thread starts 4 worker_threads; each allocates what a Node service allocates: Buffers
 * (large ones are malloc'd and calloc'd by node's ArrayBuffer allocator, outside V8's heap), JSON
 * text parsed back into objects, and zlib streams (zlib's state is malloc'd), then posts a digest
 * of everything it made (FNV-1a: OpenSSL's start-up costs half a million mallocs a thread, which
 * exact mode would spend most of its time recording). The main thread combines the digests in
 * worker order with SHA-256, so the output depends only on the arguments, never on scheduling:
 * node.sh compares it with a run without leek. It must never print anything that varies from run
 * to run.
 *
 * Usage: node worker.js ROUNDS
 */
'use strict';
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const zlib = require('zlib');

const WORKERS = 4;
const BIG = 256 * 1024; /* above the Buffer pool: each one is its own malloc */

/* A deterministic pseudo-random stream (xorshift32). */
function rng(seed) {
	let x = seed | 0 || 1;
	return () => {
		x ^= x << 13;
		x ^= x >>> 17;
		x ^= x << 5;
		return x >>> 0;
	};
}

/* FNV-1a over the bytes of a Buffer or a string's UTF-16 units, 32 bits. */
function fnv(h, data) {
	const str = typeof data === 'string';
	for (let i = 0; i < data.length; i++)
		h = Math.imul(h ^ (str ? data.charCodeAt(i) : data[i]), 16777619) >>> 0;
	return h;
}

function work(id, rounds) {
	const next = rng(0x9e3779b9 ^ (id + 1) * 7919);
	let h = 2166136261;
	let bigs = 0;
	for (let r = 0; r < rounds; r++) {
		/* JSON: build, print, parse back. */
		const doc = { id, r, items: [] };
		const n = 50 + (next() % 200);
		for (let i = 0; i < n; i++)
			doc.items.push({ k: 'k' + next().toString(36), v: next() % 100000, t: [i, i * 2, 'x'.repeat(i % 17)] });
		const text = JSON.stringify(doc);
		const back = JSON.parse(text);
		if (back.items.length !== n)
			throw new Error('JSON round trip lost items');
		h = fnv(h, text);

		/* Big Buffers, zero-filled and not, outside V8's heap. */
		const a = Buffer.alloc(BIG);
		const b = Buffer.allocUnsafe(BIG);
		bigs += 2;
		for (let i = 0; i < BIG; i += 4) {
			a.writeUInt32LE(next(), i);
			b.writeUInt32LE((a.readUInt32LE(i) ^ 0x5a5a5a5a) >>> 0, i);
		}

		/* zlib: deflate and inflate back, a fresh stream each time. */
		const packed = zlib.deflateSync(a.subarray(0, 64 * 1024 + (next() % 4096)), { level: 6 });
		const unpacked = zlib.inflateSync(packed);
		if (!unpacked.equals(a.subarray(0, unpacked.length)))
			throw new Error('zlib round trip differs');
		h = fnv(h, packed);
		h = fnv(h, b.subarray(0, 1024));

		/* Many small Buffers, joined. */
		const parts = [];
		for (let i = 0; i < 200; i++)
			parts.push(Buffer.from(text.slice(i, i + 40)));
		h = fnv(h, Buffer.concat(parts));
	}
	return { digest: h.toString(16), bigs };
}

if (isMainThread) {
	const crypto = require('crypto');
	const rounds = Number(process.argv[2]);
	const results = new Array(WORKERS);
	let done = 0;
	for (let id = 0; id < WORKERS; id++) {
		const w = new Worker(__filename, { workerData: { id, rounds } });
		w.on('message', (m) => { results[id] = m; });
		w.on('error', (e) => { console.error('worker ' + id + ': ' + e.message); process.exitCode = 1; });
		w.on('exit', () => {
			if (++done < WORKERS || process.exitCode)
				return;
			const all = crypto.createHash('sha256');
			let bigs = 0;
			for (const m of results) {
				all.update(m.digest);
				bigs += m.bigs;
			}
			console.log('workers ' + WORKERS);
			console.log('rounds ' + rounds);
			console.log('big_buffers ' + bigs);
			console.log('big_size ' + BIG);
			console.log('checksum ' + all.digest('hex'));
		});
	}
} else {
	parentPort.postMessage(work(workerData.id, workerData.rounds));
}
