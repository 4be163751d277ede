DROP VIEW api_calls; CREATE VIEW api_calls AS SELECT 1 AS x;
