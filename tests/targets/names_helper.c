// libnames_helper.so.1.2.3 (soname libnames_helper.so.1, with the symlinks
// libnames_helper.so.1 and libnames_helper.so beside it, as a distribution
// installs a library): names_target calls helper_add once per lam_f call, so
// tests can name the module by its file name, its soname, a symlink or its path.
__attribute__((noipa, used)) int helper_add(int a, int b) { return a + b + 1; }
