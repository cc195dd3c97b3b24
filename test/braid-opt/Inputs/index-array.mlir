// A dense array of index elements: MLIR 22's parser segfaults on it.
func.func @f() attributes {sizes = array<index: 1, 2>} {
  return
}
