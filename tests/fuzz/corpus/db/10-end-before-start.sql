UPDATE calls SET end_ns = start_ns - 71000000000;
