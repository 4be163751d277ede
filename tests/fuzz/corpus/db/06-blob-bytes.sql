UPDATE calls SET bytes = x'00ff00ff';
