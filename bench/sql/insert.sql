\set k random(1, :rows)
INSERT INTO :tbl VALUES (:k, 0);
