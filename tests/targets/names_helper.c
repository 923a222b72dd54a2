// libnames_helper.so.1.2.3 (soname libnames_helper.so.1, with the symlinks
// libnames_helper.so.1 and libnames_helper.so beside it, as a distribution
// installs a library): names_target calls helper_add once per lam_f call, so
// tests can name the module by its file name, its soname, a symlink or its path.
__attribute__((noipa, used)) int helper_add(int a, int b) { return a + b + 1; }

// helper_tree(n): n calls of helper_leaf (local to the library: a direct
// call), then a tail jump to helper_add (exported: through the library's
// PLT). A callee tree inside a library, for --callees-of / --all-calls-in
// libnames_helper.so.1:helper_tree; names_target records each n.
static __attribute__((noipa)) int helper_leaf(int x) { return x * 3 + 1; }
__attribute__((noipa, used)) int helper_tree(int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += helper_leaf(i);
  return helper_add(sum, n);
}
