fn f() {
  x();
}
