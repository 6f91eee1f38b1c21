\set k random(1, :rows)
SELECT k, v FROM :tbl WHERE k > :k ORDER BY k LIMIT 10;
