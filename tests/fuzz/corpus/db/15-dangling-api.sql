UPDATE calls SET api_id = 100000;
