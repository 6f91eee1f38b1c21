\set n random(1, :rows)
\set c (:n - 1) / 1000 + 1
INSERT INTO :tbl VALUES (:c, :n, 0);
