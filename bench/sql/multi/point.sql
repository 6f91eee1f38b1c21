\set n random(1, :rows)
\set c (:n - 1) / 1000 + 1
SELECT v FROM :tbl WHERE customer = :c AND created = :n;
