DROP VIEW api_calls; DROP TABLE calls;
