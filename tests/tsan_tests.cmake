# The ThreadSanitizer pass (-DLAZYCUBE_SANITIZE=thread; scripts/test.sh --sanitize thread; CI).
# Included by tests/CMakeLists.txt in TSan builds instead of the full test suite.
#
# The one list of what runs under TSan: the GoogleTest files that drive lazycube's threads, built
# into lazycube_tsan_tests (whole files: a case added to one of them is covered), less the few
# cases in LAZYCUBE_TSAN_SKIPPED_CASES. The rest of tests/cpp is single-threaded parsing and
# decoding, already run under ASan+UBSan; adding it here would only cost CI compile time.
set(LAZYCUBE_TSAN_TEST_SOURCES
  # util/thread_pool.cpp: parallel_for (nested, on workers), consume_as_produced.
  cpp/core/test_thread_pool.cpp
  # util/buffer.cpp: the BufferPool that batch workers take blocks from and give back.
  cpp/core/test_buffer_pool.cpp
  # cache/chunk_cache.cpp: single flight under many threads, claims, pins, eviction.
  cpp/cache/test_chunk_cache.cpp
  # The read path through the cache: many threads fetching the same chunks, tiny budgets, and
  # the batched fetch of missing chunks over HTTP (nginx).
  cpp/cache/test_read_cached.cpp
  # store/http_engine.cpp (curl multi + epoll + eventfd, the receive gate): get_many/get_each,
  # keep-alive, HTTP/2 over TLS, retries under nginx fault injection, deadlines, a forked child.
  cpp/store/test_http_store.cpp
  cpp/store/test_http_faults.cpp
  # The same engine behind every object store (HTTP, S3 on moto, GCS, Azure on Azurite): reads
  # from many threads at once, signers called on the engine's thread.
  cpp/store/test_store_contract.cpp
  # store/gcs_token.cpp: concurrent callers sharing one token exchange, renewal during a read.
  cpp/store/test_gcs_service_account.cpp
  # store/disk_cache_store.cpp: the disk cache in front of the HTTP engine.
  cpp/store/test_disk_cache.cpp
  # batch/fetch_ahead.cpp: the prefetcher with many requests in flight, its byte budget, a slow
  # request among fast ones, a fault mix.
  cpp/batch/test_fetch_ahead.cpp
  # batch/batch_generator.cpp + batch_assembly.cpp: the worker threads assembling batches,
  # errors surfacing on their batch, caller allocators; and the same over Zarr with the cache.
  cpp/batch/test_batch_generator.cpp
  cpp/batch/test_batch_zarr.cpp
  cpp/batch/test_batch_xbatcher_mode.cpp
  # batch/forecast_sampler.cpp: a batch's fields read at once, each on its own thread, their
  # windows decoded and copied on the pool.
  cpp/batch/test_forecast.cpp
  # zarr/zarr_array.cpp: chunks decoded on the pool as their bodies stream in over HTTP.
  cpp/zarr/test_http_zarr.cpp
  # dataset/stats.cpp: the parallel reduction merging partials under a mutex.
  cpp/dataset/test_dataset_stats.cpp
  # netcdf/gdal_array.cpp: one GDAL handle per (thread, file), reads from many threads, batches
  # with prefetch over a NetCDF4 file -- its chunks read natively (refs/hdf5_native_chunks.cpp:
  # the index found once under call_once, decoded on every thread).
  cpp/netcdf/test_gdal_netcdf4.cpp
  # zarr/writer*.cpp: shards written from many threads at once, encoders' thread-local scratch.
  cpp/zarr/test_zarr_writer.cpp
)

# Cases of those files left out, each with why: long single-threaded work that TSan only slows
# down (5-15x), whose threaded paths other cases cover.
set(LAZYCUBE_TSAN_SKIPPED_CASES
  # Fills 3 x 2 batches of 64 fill-value chunks of 4 MB on one thread (the generator's arithmetic).
  BatchZarrScale.BillionWindowGeneratorIsArithmetic
  # Decodes every fixture array over 5 backends: codec work; the concurrent reads of the same
  # backends are StoreContract.ConcurrentReadsGetTheirOwnBytes.
  Backends/FixtureContract.*
)

add_executable(lazycube_tsan_tests ${LAZYCUBE_TSAN_TEST_SOURCES})
target_compile_options(lazycube_tsan_tests PRIVATE ${LAZYCUBE_TEST_COMPILE_OPTIONS})
target_precompile_headers(lazycube_tsan_tests PRIVATE ${LAZYCUBE_TEST_PCH})
lazycube_test_unity(lazycube_tsan_tests)
target_include_directories(lazycube_tsan_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/cpp/support)
target_link_libraries(lazycube_tsan_tests PRIVATE lazycube GTest::gtest GTest::gtest_main)
target_compile_definitions(lazycube_tsan_tests PRIVATE
  LAZYCUBE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  LAZYCUBE_SHARED_DATA_DIR="${PROJECT_SOURCE_DIR}/../shared/data")

# Two shards: ctest -j2 runs them side by side. LAZYCUBE_NUM_THREADS=4: the thread pool has
# helpers however few cores the machine has (TSan sees only the interleavings that run).
# halt_on_error: the first race fails the test;
# second_deadlock_stack: both stacks of a lock-order inversion; die_after_fork=0: the HTTP engine
# and the chunk cache are fork-safe by design (a forked child starts its own engine threads, see
# HttpForkedChildReads and ForkedChildStartsAFreshCache), which TSan refuses by default.
# tsan.supp holds the suppressions (third-party internals only, each with its reason).
lazycube_add_sharded_gtest(lazycube_tsan_tests tsan 2)
list(JOIN LAZYCUBE_TSAN_SKIPPED_CASES ":" _tsan_skipped)
foreach(i RANGE 1)
  set_property(TEST tsan_${i}of2 APPEND PROPERTY ENVIRONMENT
    "GTEST_FILTER=-${_tsan_skipped}"
    "LAZYCUBE_NUM_THREADS=4"
    "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=${CMAKE_CURRENT_SOURCE_DIR}/tsan.supp")
endforeach()
