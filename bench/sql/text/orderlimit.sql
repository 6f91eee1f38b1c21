\set n random(1, :rows)
SELECT k, v FROM :tbl WHERE k > 'user' || lpad(:n::text, 9, '0') || '@example.com' ORDER BY k LIMIT 10;
