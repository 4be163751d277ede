UPDATE meta SET value = char(27) || ']0;title' || char(7) WHERE key = 'host';
