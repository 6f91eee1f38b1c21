\set k random(1, :rows - 100)
SELECT count(v) FROM :tbl WHERE k BETWEEN :k AND :k + 99;
