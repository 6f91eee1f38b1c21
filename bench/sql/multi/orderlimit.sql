\set c random(1, :rows / 1000)
\set t (:c - 1) * 1000 + random(0, 990)
SELECT customer, created, v FROM :tbl WHERE customer = :c AND created > :t ORDER BY created LIMIT 10;
