-- The main job of the quickstart: a PostgreSQL backend talking to the
-- memnode.  (When the access method lands, this creates a dmindex index and
-- runs a range query on it.)
CREATE EXTENSION IF NOT EXISTS dmindex;
\echo 'memnodes this instance uses:'
SELECT * FROM dmindex_memnodes();
