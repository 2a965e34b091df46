// BatchOptions::from_json: the generator's one document (Python's `generator` dict, the CLI's
// flags): every field parsed, defaults those of BatchOptions{}, each bad field named, unknown
// keys refused.
#include <gtest/gtest.h>

#include <string>
#include <nlohmann/json.hpp>

#include "batch_test_data.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using namespace lazycube::batch;
using Json = nlohmann::ordered_json;
using lazycube::testing::position_dataset;

namespace {

// The message of the UsageError from_json throws for `document` ("" when none).
std::string refusal(const Json& document) {
  try {
    (void)BatchOptions::from_json(document);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

Json stats_document() {
  VariableStats s;
  s.name = "a";
  s.count = {10};
  s.nan_count = {0};
  s.mean = {1.5};
  s.std = {2.0};
  s.min = {0.0};
  s.max = {3.0};
  return stats_to_json({s});
}

}  // namespace

TEST(BatchOptionsJson, EmptyDocumentAndNullsGiveTheDefaults) {
  const BatchOptions d;
  Json nulls = Json::object();
  for (const auto& key : BatchOptions::json_keys()) nulls[key] = nullptr;
  for (const Json& doc : {Json::object(), nulls}) {
    const BatchOptions o = BatchOptions::from_json(doc);
    EXPECT_EQ(o.input_dims, d.input_dims);
    EXPECT_EQ(o.input_overlap, d.input_overlap);
    EXPECT_EQ(o.batch_dims, d.batch_dims);
    EXPECT_EQ(o.concat_input_dims, d.concat_input_dims);
    EXPECT_EQ(o.batch_size, d.batch_size);
    EXPECT_EQ(o.drop_last, d.drop_last);
    EXPECT_EQ(o.variables, d.variables);
    EXPECT_FALSE(o.dtype || o.float_dtype || o.target || o.filter || o.fetch_ahead_bytes);
    EXPECT_TRUE(o.normalize.empty());
    EXPECT_EQ(o.shuffle, d.shuffle);
    EXPECT_EQ(o.seed, d.seed);
    EXPECT_EQ(o.shard.rank, d.shard.rank);
    EXPECT_EQ(o.shard.world_size, d.shard.world_size);
    EXPECT_EQ(o.shard.worker, d.shard.worker);
    EXPECT_EQ(o.shard.num_workers, d.shard.num_workers);
    EXPECT_EQ(o.prefetch, d.prefetch);
    EXPECT_EQ(o.blocks, d.blocks);
    EXPECT_EQ(o.cache, nullptr);
  }
}

TEST(BatchOptionsJson, EveryFieldIsParsed) {
  const Json doc = {{"input_dims", {{"time", 2}, {"y", 4}, {"x", 5}}},
                    {"input_overlap", {{"y", 1}}},
                    {"batch_dims", {{"time", 4}}},
                    {"concat_input_dims", true},
                    {"batch_size", 8},
                    {"drop_last", true},
                    {"variables", {"a", "b"}},
                    {"dtype", "float64"},
                    {"float_dtype", "float32"},
                    {"target", {{"variables", "b"}, {"offset", {{"time", 1}}}}},
                    {"filter", {{"variable", "a"}, {"max_nan_fraction", 0.25}}},
                    {"normalize", stats_document()},
                    {"shuffle", "chunk"},
                    {"seed", 7},
                    {"rank", 1},
                    {"world_size", 2},
                    {"worker", 2},
                    {"num_workers", 3},
                    {"resume", {{"epoch", 2}, {"remaining", {{4, 9}, {12, 30}}}, {"planned_for", {4, 2}}, {"blocks", {64, 3}}}},
                    {"block_samples", 120},
                    {"active_blocks", 4},
                    {"prefetch", 0},
                    {"fetch_ahead_bytes", 1024},
                    {"cache_bytes", 1 << 20}};
  ASSERT_EQ(doc.size(), BatchOptions::json_keys().size());
  const BatchOptions o = BatchOptions::from_json(doc);
  // the dims keep the document's order (not sorted by name)
  EXPECT_EQ(o.input_dims, (DimSizes{{"time", 2}, {"y", 4}, {"x", 5}}));
  EXPECT_EQ(o.input_overlap, (DimOverlaps{{"y", 1}}));
  EXPECT_EQ(o.batch_dims, (DimSizes{{"time", 4}}));
  EXPECT_TRUE(o.concat_input_dims);
  EXPECT_EQ(o.batch_size, 8u);
  EXPECT_TRUE(o.drop_last);
  EXPECT_EQ(o.variables, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*o.dtype, DataType::float_(8));
  EXPECT_EQ(*o.float_dtype, DataType::float_(4));
  ASSERT_TRUE(o.target);
  EXPECT_EQ(o.target->variables, (std::vector<std::string>{"b"}));
  EXPECT_EQ(o.target->offset.at("time"), 1);
  ASSERT_TRUE(o.filter);
  EXPECT_EQ(o.filter->variable, "a");
  EXPECT_DOUBLE_EQ(o.filter->max_nan_fraction, 0.25);
  ASSERT_EQ(o.normalize.size(), 1u);
  EXPECT_EQ(o.normalize[0].name, "a");
  EXPECT_DOUBLE_EQ(o.normalize[0].std[0], 2.0);
  EXPECT_EQ(o.shuffle, Shuffle::Chunk);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.shard.rank, 1u);
  EXPECT_EQ(o.shard.world_size, 2u);
  EXPECT_EQ(o.shard.worker, 2u);
  EXPECT_EQ(o.shard.num_workers, 3u);
  ASSERT_TRUE(o.resume);
  EXPECT_EQ(o.resume->epoch, 2u);
  EXPECT_EQ(o.resume->remaining, (std::vector<PositionRange>{{4, 9}, {12, 30}}));
  EXPECT_EQ(o.resume->planned_world_size, 4u);
  EXPECT_EQ(o.resume->planned_num_workers, 2u);
  EXPECT_EQ(o.resume->blocks, (BlockPlan{64, 3}));
  EXPECT_EQ(o.blocks, (BlockPlan{120, 4}));
  EXPECT_EQ(o.prefetch, 0u);
  EXPECT_EQ(*o.fetch_ahead_bytes, 1024u);
  ASSERT_NE(o.cache, nullptr);
  EXPECT_EQ(o.cache->stats().budget_bytes, 1u << 20);
}

TEST(BatchOptionsJson, ConveniencesOfTheDocument) {
  // a name for a list of names; true/false for shuffle; a target as names; NumPy type strings
  BatchOptions o = BatchOptions::from_json({{"variables", "a"}, {"shuffle", true}, {"target", {"a", "b"}},
                                            {"dtype", "<i4"}, {"float_dtype", "float64"}});
  EXPECT_EQ(o.variables, (std::vector<std::string>{"a"}));
  EXPECT_EQ(o.shuffle, Shuffle::Random);
  EXPECT_EQ(o.target->variables, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o.target->offset.empty());
  EXPECT_EQ(*o.dtype, DataType::int_(4));
  EXPECT_EQ(BatchOptions::from_json({{"shuffle", false}}).shuffle, Shuffle::None);
  EXPECT_EQ(BatchOptions::from_json({{"shuffle", "random"}}).shuffle, Shuffle::Random);
  EXPECT_EQ(*BatchOptions::from_json({{"dtype", "bool"}}).dtype, DataType::boolean());
  EXPECT_EQ(*BatchOptions::from_json({{"dtype", "uint16"}}).dtype, DataType::uint(2));
  EXPECT_EQ(BatchOptions::from_json({{"target", {{"offset", {{"time", -1}}}}}}).target->offset.at("time"), -1);
  // integral numbers count as integers (JSON writers may write 4 as 4.0)
  EXPECT_EQ(BatchOptions::from_json({{"input_dims", {{"time", 4.0}}}}).input_dims, (DimSizes{{"time", 4}}));
  EXPECT_EQ(BatchOptions::from_json({{"seed", 3.0}}).seed, 3u);
}

TEST(BatchOptionsJson, EachBadFieldIsNamed) {
  const std::vector<std::pair<Json, std::string>> cases = {
      {{{"input_dims", {1, 2}}}, "input_dims must be an object of dim name -> size"},
      {{{"input_dims", {{"time", -1}}}}, "input_dims['time'] must not be negative"},
      {{{"input_dims", {{"time", "2"}}}}, "input_dims['time'] must be a non-negative integer, got string"},
      {{{"input_overlap", {{"y", 1.5}}}}, "input_overlap['y'] must be an integer"},
      {{{"batch_dims", "time"}}, "batch_dims must be an object"},
      {{{"concat_input_dims", 1}}, "concat_input_dims must be true or false"},
      {{{"batch_size", -2}}, "batch_size must not be negative"},
      {{{"batch_size", 2.5}}, "batch_size must be a non-negative integer, got number 2.5"},
      {{{"drop_last", "yes"}}, "drop_last must be true or false"},
      {{{"variables", 3}}, "variables must be a name or a list of names"},
      {{{"variables", {"a", 3}}}, "variables[1] must be a string"},
      {{{"dtype", "float128x"}}, "dtype: unknown dtype 'float128x'"},
      {{{"dtype", 4}}, "dtype must be a string"},
      {{{"float_dtype", "wide"}}, "float_dtype: unknown dtype 'wide'"},
      {{{"target", 3}}, "target must be a variable name"},
      {{{"target", {{"shift", 1}}}}, "target takes the keys 'variables' and 'offset', not 'shift'"},
      {{{"target", Json::object()}}, "target needs 'variables' and/or 'offset'"},
      {{{"target", {{"offset", {{"time", "1"}}}}}}, "target['offset']['time'] must be an integer"},
      {{{"filter", "a"}}, "filter must be an object"},
      {{{"filter", {{"variable", "a"}, {"fraction", 0.1}}}}, "filter takes the keys 'variable' and 'max_nan_fraction', not 'fraction'"},
      {{{"filter", {{"max_nan_fraction", "0.1"}}}}, "filter['max_nan_fraction'] must be a number"},
      {{{"normalize", 3}}, "normalize must be a stats document"},
      {{{"normalize", {{"format", "other"}}}}, "normalize: "},
      {{{"shuffle", "sideways"}}, "shuffle: unknown value 'sideways' (choices: none, random, chunk"},
      {{{"shuffle", 1}}, "shuffle must be true/false or one of none, random, chunk"},
      {{{"seed", -1}}, "seed must not be negative"},
      {{{"rank", "0"}}, "rank must be a non-negative integer"},
      {{{"world_size", std::uint64_t{1} << 40}}, "world_size must be at most 4294967295"},
      {{{"worker", true}}, "worker must be a non-negative integer, got boolean"},
      {{{"num_workers", -1}}, "num_workers must not be negative"},
      {{{"prefetch", "2"}}, "prefetch must be a non-negative integer"},
      {{{"fetch_ahead_bytes", -1}}, "fetch_ahead_bytes must not be negative"},
      {{{"cache_bytes", -5}}, "cache_bytes must not be negative"},
      {Json::array(), "the batch options must be an object"},
  };
  for (const auto& [doc, want] : cases) {
    const std::string got = refusal(doc);
    EXPECT_NE(got.find(want), std::string::npos) << doc.dump() << " -> '" << got << "', wanted '" << want << "'";
  }
}

TEST(BatchOptionsJson, UnknownKeysAreRefusedWithTheKnownOnes) {
  const std::string got = refusal({{"batch_size", 4}, {"target_variables", {"a"}}});
  EXPECT_NE(got.find("unknown batch option 'target_variables'"), std::string::npos) << got;
  for (const auto& key : BatchOptions::json_keys()) EXPECT_NE(got.find(key), std::string::npos) << key;
  // null does not make an unknown key acceptable
  EXPECT_NE(refusal({{"pinned", nullptr}}).find("unknown batch option 'pinned'"), std::string::npos);
}

TEST(BatchOptionsJson, TheDocumentDrivesTheSameWindowsAsOptionsBuiltByHand) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  BatchOptions by_hand;
  by_hand.input_dims = {{"time", 2}, {"y", 4}, {"x", 5}};
  by_hand.batch_size = 3;
  by_hand.shuffle = Shuffle::Random;
  by_hand.seed = 11;
  by_hand.target = TargetSpec{{"b"}, {{"time", 1}}};
  by_hand.cache = std::make_shared<ChunkCache>(64 << 20);
  const Json doc = {{"input_dims", {{"time", 2}, {"y", 4}, {"x", 5}}},
                    {"batch_size", 3},
                    {"shuffle", "random"},
                    {"seed", 11},
                    {"target", {{"variables", {"b"}}, {"offset", {{"time", 1}}}}},
                    {"cache_bytes", 64 << 20}};
  BatchGenerator a(ds, by_hand), b(ds, BatchOptions::from_json(doc));
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.state()["config"], b.state()["config"]);
  for (std::uint64_t i = 0; i < a.size(); ++i) EXPECT_EQ(a.batch(i).window_ids, b.batch(i).window_ids) << i;
}
