# Sourced before library(rstan) by the corpus's Stan scripts (make_reference.R,
# diagnosis_copies.R). Debian's r-cran-bh ships no headers (they are libboost-dev's, in
# /usr/include), and rstan refuses to compile without BH's include folder: give it a private
# copy that points there.
use_debian_bh <- function() {
  bh <- find.package("BH")
  if (dir.exists(file.path(bh, "include"))) return(invisible(FALSE))
  lib <- file.path(tempdir(), "lib")
  dir.create(file.path(lib, "BH"), recursive = TRUE)
  file.copy(list.files(bh, full.names = TRUE), file.path(lib, "BH"), recursive = TRUE)
  file.symlink("/usr/include", file.path(lib, "BH", "include"))
  .libPaths(c(lib, .libPaths()))
  invisible(TRUE)
}
