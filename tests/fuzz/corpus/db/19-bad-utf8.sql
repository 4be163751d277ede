UPDATE sites SET text = CAST(x'c328ff' AS TEXT);
