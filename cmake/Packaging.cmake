# The Debian package (`cpack -G DEB` in the build folder, or the `package` target):
# ranksight_<version>_amd64.deb with both programs, the reader process, the Python recorder, presets and rank
# tables, man pages, docs, and the desktop integration (menu entry, icons, the run-file MIME type, AppStream
# metainfo). Depends: comes from the binaries (dpkg-shlibdeps), not a hand-kept list.
include(GNUInstallDirs)
set(_desk ${PROJECT_SOURCE_DIR}/resources/desktop)
set(_id org.ranksight.RankSight)
set(_gen ${PROJECT_BINARY_DIR}/packaging)

# Desktop integration.
install(FILES ${_desk}/${_id}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${_desk}/${_id}.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages)
install(FILES ${_desk}/${_id}.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
foreach(size 16 32 48 64 128 256)
  install(FILES ${_desk}/icons/${size}.png DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps
          RENAME ${_id}.png)
endforeach()
configure_file(${_desk}/${_id}.metainfo.xml ${_gen}/${_id}.metainfo.xml @ONLY)
install(FILES ${_gen}/${_id}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)

# Man pages and the Debian changelog, gzipped as Debian policy wants them (-n: no name or time stamp, so
# the package is reproducible).
find_program(GZIP_PROGRAM gzip REQUIRED)
set(_gz_outputs "")
foreach(page ranksight.1 ranksight-cli.1)
  configure_file(${PROJECT_SOURCE_DIR}/docs/man/${page} ${_gen}/${page} @ONLY)
  list(APPEND _gz_inputs ${_gen}/${page})
endforeach()
string(TIMESTAMP _changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${_gen}/changelog
     "ranksight (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Built with CMake and CPack; see /usr/share/doc/ranksight/README.md.\n\n"
     " -- RankSight developers <ranksight@users.noreply.github.com>  ${_changelog_date}\n")
list(APPEND _gz_inputs ${_gen}/changelog)
foreach(in ${_gz_inputs})
  add_custom_command(OUTPUT ${in}.gz COMMAND sh -c "${GZIP_PROGRAM} -9n -c ${in} > ${in}.gz" DEPENDS ${in}
                     VERBATIM)
  list(APPEND _gz_outputs ${in}.gz)
endforeach()
add_custom_target(ranksight_packaging_files ALL DEPENDS ${_gz_outputs})
install(FILES ${_gen}/ranksight.1.gz ${_gen}/ranksight-cli.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${_gen}/changelog.gz ${PROJECT_SOURCE_DIR}/README.md
        ${PROJECT_SOURCE_DIR}/resources/desktop/copyright DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/ranksight)
# The README's links into docs/ resolve in the installed copy too (the screenshots stay in the source tree).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/ranksight/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "man" EXCLUDE PATTERN "screenshots" EXCLUDE)

set(CPACK_PACKAGE_NAME ranksight)
set(CPACK_PACKAGE_VENDOR "RankSight developers")
set(CPACK_PACKAGE_CONTACT "RankSight developers <ranksight@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "watch data-parallel training rank against rank")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "RankSight trains models data-parallel across emulated Ascend cards (HCCL-like\n"
    "all-reduce, FP16 loss scaling), records per step, rank and parameter what the\n"
    "gradients did into an HDF5 run file, and shows loss curves, rank by rank\n"
    "gradient heatmaps and overflow timelines live. It records PyTorch DDP jobs,\n"
    "imports msprobe monitor output, reproduces known failure causes and names the\n"
    "likely cause of disagreement between ranks.")
string(REPLACE ";" "" CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_PACKAGE_DESCRIPTION}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # ranksight_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/ranksight/ranksight")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Not found by shlibdeps: the OpenBLAS LibTorch needs to be fast (it falls back to the reference BLAS),
# and Python for the recorder (recommended: only PyTorch jobs need it).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-pthread | libopenblas0")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, python3-numpy, python3-h5py")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, dataset-fashion-mnist")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
