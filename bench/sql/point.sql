\set k random(1, :rows)
SELECT v FROM :tbl WHERE k = :k;
