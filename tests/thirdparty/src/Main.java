/* tests/thirdparty/src/Main.java: the JVM program jvm.sh runs with and without leek.
 *
 * 32 threads allocate what a Java service allocates: collections that grow, strings, and direct
 * ByteBuffers, whose memory comes from malloc (Unsafe.allocateMemory) and goes back to free when
 * the Cleaner runs after a GC. Each thread also catches NullPointerExceptions in a hot loop, which
 * HotSpot's compiled code detects with SIGSEGV, and one thread overflows its stack on purpose,
 * which the JVM also turns from a SIGSEGV into an exception; System.gc() runs while the threads
 * work, so every thread stops at safepoints (another SIGSEGV-based mechanism). leek must let all
 * of that through untouched.
 *
 * The output is a checksum and counts that depend only on the arguments, never on scheduling or
 * timing: jvm.sh compares it with a run without leek. It must never print anything that varies
 * from run to run (addresses, times, the depth of the stack overflow).
 *
 * Usage: java -Xmx256m Main ROUNDS
 */
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

public class Main {
	static final int THREADS = 32;
	static final int DIRECT_SIZE = 64 * 1024;

	static final AtomicLong directBytes = new AtomicLong();
	static final AtomicLong npes = new AtomicLong();

	/* Hot, so that it is compiled and its null check becomes an implicit one (a SIGSEGV). */
	static int length(String s)
	{
		return s.length();
	}

	static int depth;

	static void recurse()
	{
		depth++;
		recurse();
	}

	/* A deterministic pseudo-random stream per thread (xorshift64). */
	static long next(long[] state)
	{
		long x = state[0];
		x ^= x << 13;
		x ^= x >>> 7;
		x ^= x << 17;
		state[0] = x;
		return x;
	}

	static long work(int id, int rounds)
	{
		long[] rng = { 0x9E3779B97F4A7C15L ^ (id + 1) * 0x100000001B3L };
		long sum = 0;
		String[] words = new String[64];
		for (int i = 0; i < words.length; i++)
			words[i] = (i % 16 == 7) ? null : "w" + id + "-" + i;

		for (int r = 0; r < rounds; r++) {
			/* Collections that grow, and strings. */
			List<String> list = new ArrayList<>();
			Map<String, Integer> map = new HashMap<>();
			int n = 200 + (int) Math.floorMod(next(rng), 800L);
			for (int i = 0; i < n; i++) {
				String s = Long.toHexString(next(rng)) + ":" + i;
				list.add(s);
				map.merge(s.substring(0, 2), s.length(), Integer::sum);
			}
			StringBuilder sb = new StringBuilder();
			for (String s : list)
				sb.append(s, 0, 3);
			sum = sum * 31 + sb.toString().hashCode();
			for (Map.Entry<String, Integer> e : map.entrySet())
				sum += e.getKey().hashCode() * (long) e.getValue();

			/* A direct buffer: malloc'd by the JVM, freed after a GC. */
			ByteBuffer buf = ByteBuffer.allocateDirect(DIRECT_SIZE);
			directBytes.addAndGet(DIRECT_SIZE);
			for (int i = 0; i < DIRECT_SIZE; i += 8)
				buf.putLong(i, next(rng));
			for (int i = 0; i < DIRECT_SIZE; i += 4096)
				sum += buf.getLong(i);

			/* NullPointerExceptions, caught. */
			for (int i = 0; i < 4096; i++) {
				try {
					sum += length(words[i % words.length]);
				} catch (NullPointerException e) {
					npes.incrementAndGet();
					sum += 1;
				}
			}

			if (id == 0 && r % 8 == 0)
				System.gc();
		}
		if (id == 1) {
			try {
				recurse();
			} catch (StackOverflowError e) {
				sum += 7; /* the depth varies with the stack, the catch does not */
			}
		}
		return sum;
	}

	public static void main(String[] args) throws Exception
	{
		int rounds = Integer.parseInt(args[0]);
		long[] sums = new long[THREADS];
		Thread[] threads = new Thread[THREADS];
		for (int t = 0; t < THREADS; t++) {
			final int id = t;
			threads[t] = new Thread(() -> sums[id] = work(id, rounds), "worker-" + t);
			threads[t].start();
		}
		for (Thread t : threads)
			t.join();
		System.gc();

		long total = 0;
		for (long s : sums)
			total = total * 1000003 + s;
		System.out.println("threads " + THREADS);
		System.out.println("rounds " + rounds);
		System.out.println("npes " + npes.get());
		System.out.println("direct_bytes " + directBytes.get());
		System.out.printf("checksum %016x%n", total);
	}
}
