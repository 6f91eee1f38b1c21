\set c random(1, :rows / 1000)
\set t (:c - 1) * 1000 + random(1, 901)
SELECT count(v) FROM :tbl WHERE customer = :c AND created BETWEEN :t AND :t + 99;
