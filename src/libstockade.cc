// libstockade.so is made of the static libraries of stockade, whole
// (src/CMakeLists.txt); this file only gives the target a source.
