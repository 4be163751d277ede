UPDATE calls SET stream = NULL, bytes = NULL, site_id = NULL, aux = NULL;
