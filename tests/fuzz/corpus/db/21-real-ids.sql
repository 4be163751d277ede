UPDATE calls SET tid = 1.5, stream = 1e308;
