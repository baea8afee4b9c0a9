a
B
