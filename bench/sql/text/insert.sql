\set n random(1, :rows)
INSERT INTO :tbl VALUES ('user' || lpad(:n::text, 9, '0') || '@example.com', 0);
