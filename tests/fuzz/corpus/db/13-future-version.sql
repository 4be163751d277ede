UPDATE meta SET value = '99' WHERE key = 'schema_version';
