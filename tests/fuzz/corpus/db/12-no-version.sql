DELETE FROM meta WHERE key = 'schema_version';
