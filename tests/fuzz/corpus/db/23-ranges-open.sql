UPDATE ranges SET end_ns = NULL, depth = -1;
