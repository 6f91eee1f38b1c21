\set n random(1, :rows - 100)
SELECT count(v) FROM :tbl WHERE k BETWEEN 'user' || lpad(:n::text, 9, '0') || '@example.com' AND 'user' || lpad((:n + 99)::text, 9, '0') || '@example.com';
