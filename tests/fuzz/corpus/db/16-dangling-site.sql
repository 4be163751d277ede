UPDATE calls SET site_id = -1;
