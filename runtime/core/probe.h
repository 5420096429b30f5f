inline int probe() { return 1; }
