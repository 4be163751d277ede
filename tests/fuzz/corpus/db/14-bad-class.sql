UPDATE calls SET class = 'S9' WHERE id % 2 = 0;
