UPDATE calls SET start_ns = 'soon', end_ns = 'later';
