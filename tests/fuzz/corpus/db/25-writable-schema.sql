PRAGMA writable_schema = 1; UPDATE sqlite_schema SET sql = 'CREATE TABLE calls(x)' WHERE name = 'calls';
