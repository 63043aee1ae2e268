# sqlite-gen.awk: writes the SQL script of bench/real.sh's sqlite3 workload to stdout.
#
#   awk -v rows=200000 -f bench/workloads/sqlite-gen.awk >w.sql && sqlite3 :memory: '.read w.sql'
#
# 200 000 orders inserted one statement each, in transactions of 10 000 (so the parser and the
# page cache both allocate), then an index, group-by and join queries, an update and a delete.
# The values come from a fixed LCG, so every run is the same script.
function rnd(n) { seed = (seed * 1103515245 + 12345) % 2147483648; return int(seed / 65536) % n }
BEGIN {
	if (!rows) rows = 200000
	seed = 42
	print "PRAGMA cache_size = -65536;"
	print "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT);"
	print "CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, item TEXT, qty INTEGER," \
	      " price REAL, note TEXT);"
	print "BEGIN;"
	for (c = 1; c <= 2000; c++)
		printf "INSERT INTO customer VALUES(%d, 'customer-%d', 'city-%d');\n", c, c, rnd(50)
	print "COMMIT;"
	for (i = 1; i <= rows; i++) {
		if (i % 10000 == 1) print "BEGIN;"
		printf "INSERT INTO orders VALUES(%d, %d, 'item-%05d', %d, %d.%02d, '%s');\n", i,
		       1 + rnd(2000), rnd(5000), 1 + rnd(20), rnd(500), rnd(100),
		       substr("lorem ipsum dolor sit amet consectetur adipiscing elit sed do", 1, 8 + rnd(50))
		if (i % 10000 == 0 || i == rows) print "COMMIT;"
	}
	print "CREATE INDEX orders_customer ON orders(customer);"
	print "CREATE INDEX orders_item ON orders(item, qty);"
	print "SELECT count(*), sum(qty * price) FROM orders;"
	print "SELECT customer, count(*), sum(qty), avg(price) FROM orders GROUP BY customer" \
	      " ORDER BY 4 DESC LIMIT 10;"
	print "SELECT item, count(*), group_concat(DISTINCT customer) FROM orders GROUP BY item" \
	      " ORDER BY 2 DESC LIMIT 5;"
	print "SELECT c.city, count(*), round(sum(o.qty * o.price), 2) FROM orders o" \
	      " JOIN customer c ON c.id = o.customer GROUP BY c.city ORDER BY 3 DESC LIMIT 10;"
	print "SELECT length(group_concat(note)) FROM (SELECT note FROM orders ORDER BY note, id);"
	print "UPDATE orders SET note = upper(note) || '!' WHERE qty > 15;"
	print "DELETE FROM orders WHERE price < 50;"
	print "SELECT qty, count(*) FROM orders GROUP BY qty ORDER BY qty;"
}
