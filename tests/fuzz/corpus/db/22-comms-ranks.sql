UPDATE comms SET rank = -5, nranks = 0;
