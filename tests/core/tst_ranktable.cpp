// Rank table (MindSpore hccl.json): the example file and generated tables are valid and round-trip;
// each validation rule reports a problem naming the field and entry; several problems are all reported.
#include "cluster/RankTable.h"

#include <QtTest>
#include <nlohmann/json.hpp>
#include <set>

namespace {

QString fixture(const char* name) {
    return QStringLiteral(RANKSIGHT_TEST_DATA "/ranktables/") + QLatin1String(name);
}

// A device entry with every field a JSON string.
QByteArray dev(const char* deviceId, const char* ip, const char* rank) {
    return QByteArray(R"({"device_id": ")") + deviceId + R"(", "device_ip": ")" + ip + R"(", "rank_id": ")" +
           rank + R"("})";
}

QByteArray fourDevices() {
    return dev("0", "192.0.2.10", "0") + "," + dev("1", "192.0.2.11", "1") + "," +
           dev("2", "192.0.2.12", "2") + "," + dev("3", "192.0.2.13", "3");
}

QByteArray server(const QByteArray& devices, const char* id = "198.51.100.7") {
    return QByteArray(R"({"server_id": ")") + id + R"(", "device": [)" + devices +
           R"(], "host_nic_ip": "reserve"})";
}

QByteArray table(const QByteArray& servers, const QByteArray& serverCount = R"("1")") {
    return QByteArray(R"({"version": "1.0", "server_count": )") + serverCount + R"(, "server_list": [)" +
           servers + R"(], "status": "completed"})";
}

QByteArray oneServer(const QByteArray& devices) {
    return table(server(devices));
}

bool hasProblem(const rs::RankTableCheck& check, const QString& where, const QString& fragment) {
    for (const rs::RankTableProblem& p : check.problems)
        if (QString::fromStdString(p.where) == where && QString::fromStdString(p.message).contains(fragment))
            return true;
    return false;
}

QByteArray describe(const rs::RankTableCheck& check) {
    return QByteArray("problems:\n") + QByteArray::fromStdString(check.summary());
}

} // namespace

class TestRankTable : public QObject {
    Q_OBJECT

private slots:
    void exampleIsValid() {
        const rs::RankTableCheck check = rs::loadRankTable(fixture("valid_4p.json").toStdString(), 4);
        QVERIFY2(check.ok(), describe(check).constData());
        QVERIFY(check.summary().empty());
        const rs::RankTable& t = *check.table;
        QCOMPARE(t.version, std::string("1.0"));
        QCOMPARE(t.worldSize(), 4);
        QCOMPARE(t.serverCount(), 1);
        for (int r = 0; r < 4; ++r) {
            QCOMPARE(t.devices[r].rankId, r);
            QCOMPARE(t.devices[r].deviceId, r);
            QCOMPARE(t.devices[r].deviceIp, "192.0.2." + std::to_string(10 + r));
            QCOMPARE(t.devices[r].serverId, std::string("198.51.100.7"));
        }
    }

    void twoServerFileIsValid() {
        const rs::RankTableCheck check =
            rs::loadRankTable(fixture("valid_16p_2servers.json").toStdString(), 16);
        QVERIFY2(check.ok(), describe(check).constData());
        QCOMPARE(check.table->serverCount(), 2);
        QCOMPARE(check.table->devices[9].deviceId, 1); // device ids restart on each server
        QCOMPARE(check.table->devices[9].serverId, std::string("198.51.100.8"));
    }

    // A table for a multi-node run: whole servers per node, servers of one size, each a contiguous block of
    // ranks; every problem named with its server.
    void checkNodesAgainstTheServers() {
        const rs::RankTable two = rs::generateRankTable(8, 4);
        QVERIFY(rs::checkNodes(two, 2).empty());
        QVERIFY(rs::checkNodes(two, 1).empty());                             // one node holding both servers
        QVERIFY(rs::checkNodes(rs::generateRankTable(1024, 8), 16).empty()); // 8 servers of 8 per node
        auto p = rs::checkNodes(two, 4);
        QCOMPARE(p.size(), size_t(1));
        QCOMPARE(QString::fromStdString(p[0].message),
                 QString("2 server(s) for 4 node(s): each node process holds a whole number of servers"));
        p = rs::checkNodes(rs::generateRankTable(16, 4), 3);
        QCOMPARE(p.size(), size_t(1));
        QVERIFY(QString::fromStdString(p[0].message).startsWith("4 server(s) for 3 node(s)"));
        p = rs::checkNodes(rs::generateRankTable(6, 4), 2);
        QCOMPARE(p.size(), size_t(2));
        QCOMPARE(QString::fromStdString(p[0].where), QString("server_list[0] (server_id \"198.51.100.1\")"));
        QVERIFY(QString::fromStdString(p[0].message).startsWith("4 device(s) where each server needs 3"));
        rs::RankTable mixed = two;
        std::swap(mixed.devices[1].serverId, mixed.devices[5].serverId);
        p = rs::checkNodes(mixed, 2);
        QVERIFY(!p.empty());
        QCOMPARE(QString::fromStdString(p[0].message),
                 QString("holds rank_id 2 where server 0 (on node 0) holds ranks 0..3: list each server's "
                         "ranks as one contiguous block, in server order"));
    }

    void devicesAreSortedByRank() {
        const QByteArray json = oneServer(dev("0", "192.0.2.10", "2") + "," + dev("1", "192.0.2.11", "0") +
                                          "," + dev("2", "192.0.2.12", "1"));
        const rs::RankTableCheck check = rs::parseRankTable(json.toStdString());
        QVERIFY2(check.ok(), describe(check).constData());
        QCOMPARE(check.table->devices[0].deviceId, 1);
        QCOMPARE(check.table->devices[1].deviceId, 2);
        QCOMPARE(check.table->devices[2].deviceId, 0);
    }

    void generatedRoundTrip_data() {
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<int>("perServer");
        QTest::addColumn<int>("servers");
        QTest::addRow("1 rank") << 1 << 8 << 1;
        QTest::addRow("8 ranks, one server") << 8 << 8 << 1;
        QTest::addRow("16 ranks, two servers") << 16 << 8 << 2;
        QTest::addRow("12 ranks, uneven servers") << 12 << 8 << 2;
        QTest::addRow("6 ranks, 2 per server") << 6 << 2 << 3;
    }

    void generatedRoundTrip() {
        QFETCH(int, worldSize);
        QFETCH(int, perServer);
        QFETCH(int, servers);
        const rs::RankTable generated = rs::generateRankTable(worldSize, perServer);
        QCOMPARE(generated.worldSize(), worldSize);
        QCOMPARE(generated.serverCount(), servers);
        for (int r = 0; r < worldSize; ++r) {
            QCOMPARE(generated.devices[r].rankId, r);
            QCOMPARE(generated.devices[r].deviceId, r % perServer);
            QCOMPARE(generated.devices[r].deviceIp, "192.0.2." + std::to_string(10 + r));
            QCOMPARE(generated.devices[r].serverId, "198.51.100." + std::to_string(1 + r / perServer));
        }

        const std::string text = generated.toJson();
        const rs::RankTableCheck check = rs::parseRankTable(text, worldSize);
        QVERIFY2(check.ok(), describe(check).constData());
        QCOMPARE(check.table->version, generated.version);
        QCOMPARE(check.table->devices.size(), generated.devices.size());
        for (size_t i = 0; i < generated.devices.size(); ++i) {
            QCOMPARE(check.table->devices[i].rankId, generated.devices[i].rankId);
            QCOMPARE(check.table->devices[i].deviceId, generated.devices[i].deviceId);
            QCOMPARE(check.table->devices[i].deviceIp, generated.devices[i].deviceIp);
            QCOMPARE(check.table->devices[i].serverId, generated.devices[i].serverId);
        }

        // MindSpore's shape: every number is a string, servers in order
        const nlohmann::json doc = nlohmann::json::parse(text);
        QCOMPARE(doc["server_count"], nlohmann::json(std::to_string(servers)));
        QCOMPARE(doc["status"], nlohmann::json("completed"));
        QCOMPARE(int(doc["server_list"].size()), servers);
        QCOMPARE(doc["server_list"][0]["server_id"], nlohmann::json("198.51.100.1"));
        for (const auto& s : doc["server_list"])
            for (const auto& d : s["device"]) {
                QVERIFY(d["device_id"].is_string());
                QVERIFY(d["rank_id"].is_string());
                QVERIFY(d["device_ip"].is_string());
            }
    }

    // Past 245 ranks (the documentation ranges' addresses) a generated table uses private ranges: a
    // 1,024-rank table of 128 servers has a distinct device ip per rank and validates as MindSpore's.
    void generatedTableOfAThousandRanks() {
        const rs::RankTable t = rs::generateRankTable(1024, 8);
        QCOMPARE(t.worldSize(), 1024);
        QCOMPARE(t.serverCount(), 128);
        std::set<std::string> ips;
        for (const auto& d : t.devices)
            ips.insert(d.deviceIp);
        QCOMPARE(int(ips.size()), 1024);
        QCOMPARE(t.devices[1023].deviceIp, std::string("10.1.4.24"));
        QCOMPARE(t.devices[1023].serverId, std::string("10.0.0.128"));
        const rs::RankTableCheck check = rs::parseRankTable(t.toJson(), 1024);
        QVERIFY2(check.ok(), describe(check).constData());
        QCOMPARE(check.table->serverCount(), 128);
    }

    void generateRejectsBadArguments() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rs::generateRankTable(0));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rs::generateRankTable(62501));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rs::generateRankTable(8, 9));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rs::generateRankTable(8, 0));
    }

    // One row per validation rule: the problem named at its field, and no cascade of other problems.
    void problem_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<int>("expectedRanks");
        QTest::addColumn<QString>("where");
        QTest::addColumn<QString>("fragment");
        QTest::addColumn<int>("problemCount");

        QTest::addRow("malformed JSON")
            << QByteArray("{\"version\": \"1.0\",\n \"server_count\" \"1\"}") << -1 << "line 2, column 19"
            << "malformed JSON" << 1;
        QTest::addRow("truncated JSON")
            << QByteArray("{\"version\": \"1.0\",\n  \"server_list\": [") << -1 << "line 2, column 19"
            << "malformed JSON" << 1;
        QTest::addRow("empty text") << QByteArray("") << -1 << "line 1, column 1"
                                    << "malformed JSON" << 1;
        QTest::addRow("top level is an array") << QByteArray("[1, 2]") << -1 << "top level"
                                               << "expected a JSON object, found an array" << 1;
        QTest::addRow("missing version")
            << QByteArray(R"({"server_count": "1", "server_list": [)" + server(fourDevices()) + "]}") << -1
            << "version"
            << "missing field \"version\"" << 1;
        QTest::addRow("missing server_count")
            << QByteArray(R"({"version": "1.0", "server_list": [)" + server(fourDevices()) + "]}") << -1
            << "server_count"
            << "missing field" << 1;
        QTest::addRow("missing server_list")
            << QByteArray(R"({"version": "1.0", "server_count": "1"})") << -1 << "server_list"
            << "missing field \"server_list\"" << 1;
        QTest::addRow("missing device") << table(R"({"server_id": "198.51.100.7", "host_nic_ip": "reserve"})")
                                        << -1 << "server_list[0].device"
                                        << "missing field \"device\"" << 1;
        QTest::addRow("missing server_id") << table(R"({"device": [)" + dev("0", "192.0.2.10", "0") + "]}")
                                           << -1 << "server_list[0].server_id"
                                           << "missing field" << 1;
        QTest::addRow("missing device_id")
            << oneServer(dev("0", "192.0.2.10", "0") + R"(, {"device_ip": "192.0.2.11", "rank_id": "1"})")
            << -1 << "server_list[0].device[1].device_id"
            << "missing field \"device_id\"" << 1;
        QTest::addRow("missing device_ip")
            << oneServer(dev("0", "192.0.2.10", "0") + R"(, {"device_id": "1", "rank_id": "1"})") << -1
            << "server_list[0].device[1].device_ip"
            << "missing field \"device_ip\"" << 1;
        QTest::addRow("missing rank_id")
            << oneServer(dev("0", "192.0.2.10", "0") + R"(, {"device_id": "1", "device_ip": "192.0.2.11"})")
            << -1 << "server_list[0].device[1].rank_id"
            << "missing field \"rank_id\"" << 1;
        QTest::addRow("rank_id is a number")
            << oneServer(dev("0", "192.0.2.10", "0") +
                         R"(, {"device_id": "1", "device_ip": "192.0.2.11", "rank_id": 1})")
            << -1 << "server_list[0].device[1].rank_id"
            << "is the JSON number 1, but MindSpore writes every number as a string: use \"1\"" << 1;
        QTest::addRow("device_id is a number")
            << oneServer(R"({"device_id": 0, "device_ip": "192.0.2.10", "rank_id": "0"})") << -1
            << "server_list[0].device[0].device_id"
            << "MindSpore writes every number as a string" << 1;
        QTest::addRow("server_count is a number") << table(server(fourDevices()), "1") << -1 << "server_count"
                                                  << "MindSpore writes every number as a string" << 1;
        QTest::addRow("rank_id is boolean")
            << oneServer(R"({"device_id": "0", "device_ip": "192.0.2.10", "rank_id": true})") << -1
            << "server_list[0].device[0].rank_id"
            << "found boolean true" << 1;
        QTest::addRow("rank_id is negative")
            << oneServer(dev("0", "192.0.2.10", "-1")) << -1 << "server_list[0].device[0].rank_id"
            << "\"-1\" is not a non-negative decimal integer" << 1;
        QTest::addRow("rank_id is not a number")
            << oneServer(dev("0", "192.0.2.10", "zero")) << -1 << "server_list[0].device[0].rank_id"
            << "\"zero\" is not a non-negative decimal integer" << 1;
        QTest::addRow("device_ip is a number")
            << oneServer(R"({"device_id": "0", "device_ip": 3221225994, "rank_id": "0"})") << -1
            << "server_list[0].device[0].device_ip"
            << "expected a string" << 1;
        QTest::addRow("duplicate rank_id")
            << oneServer(dev("0", "192.0.2.10", "0") + "," + dev("1", "192.0.2.11", "1") + "," +
                         dev("2", "192.0.2.12", "1") + "," + dev("3", "192.0.2.13", "3"))
            << -1 << "server_list[0].device[2].rank_id"
            << "duplicate rank_id \"1\" (also at server_list[0].device[1])" << 2; // and rank 2 is missing
        QTest::addRow("duplicate rank_id across servers")
            << table(server(dev("0", "192.0.2.10", "0") + "," + dev("1", "192.0.2.11", "1")) + "," +
                         server(dev("0", "192.0.2.12", "1") + "," + dev("1", "192.0.2.13", "3"),
                                "198.51.100.8"),
                     R"("2")")
            << -1 << "server_list[1].device[0].rank_id"
            << "duplicate rank_id \"1\" (also at server_list[0].device[1])" << 2;
        QTest::addRow("duplicate device_id")
            << oneServer(dev("0", "192.0.2.10", "0") + "," + dev("1", "192.0.2.11", "1") + "," +
                         dev("1", "192.0.2.12", "2") + "," + dev("3", "192.0.2.13", "3"))
            << -1 << "server_list[0].device[2].device_id"
            << "duplicate device_id \"1\" in the same server (also at server_list[0].device[1])" << 1;
        QTest::addRow("duplicate device_ip across servers")
            << table(server(dev("0", "192.0.2.10", "0") + "," + dev("1", "192.0.2.11", "1")) + "," +
                         server(dev("0", "192.0.2.10", "2") + "," + dev("1", "192.0.2.13", "3"),
                                "198.51.100.8"),
                     R"("2")")
            << -1 << "server_list[1].device[0].device_ip"
            << "duplicate device_ip \"192.0.2.10\" (also at server_list[0].device[0])" << 1;
        QTest::addRow("duplicate server_id")
            << table(server(dev("0", "192.0.2.10", "0")) + "," + server(dev("0", "192.0.2.11", "1")),
                     R"("2")")
            << -1 << "server_list[1].server_id"
            << "duplicate server_id \"198.51.100.7\" (also at server_list[0])" << 1;
        QTest::addRow("rank id out of range")
            << oneServer(dev("0", "192.0.2.10", "0") + "," + dev("1", "192.0.2.11", "1") + "," +
                         dev("2", "192.0.2.12", "2") + "," + dev("3", "192.0.2.13", "5"))
            << -1 << "server_list[0].device[3].rank_id"
            << "rank_id \"5\" is out of range: with 4 devices rank ids must run 0..3" << 2;
        QTest::addRow("rank id missing")
            << oneServer(dev("0", "192.0.2.10", "0") + "," + dev("1", "192.0.2.11", "1") + "," +
                         dev("2", "192.0.2.12", "2") + "," + dev("3", "192.0.2.13", "5"))
            << -1 << "server_list"
            << "rank ids must run 0..3 without gaps; missing rank_id 3" << 2;
        QTest::addRow("rank ids start at 1")
            << oneServer(dev("0", "192.0.2.10", "1") + "," + dev("1", "192.0.2.11", "2") + "," +
                         dev("2", "192.0.2.12", "3"))
            << -1 << "server_list"
            << "missing rank_id 0" << 2;
        QTest::addRow("server_count mismatch")
            << table(server(fourDevices()), R"("2")") << -1 << "server_count"
            << "says \"2\" but server_list has 1 entry" << 1;
        QTest::addRow("empty server_list") << table("", R"("0")") << -1 << "server_list"
                                           << "is empty" << 1;
        QTest::addRow("count != expected ranks") << oneServer(fourDevices()) << 8 << "server_list"
                                                 << "lists 4 devices but the job has 8 ranks" << 1;
        QTest::addRow("more devices than expected") << oneServer(fourDevices()) << 2 << "server_list"
                                                    << "lists 4 devices but the job has 2 ranks" << 1;
        QTest::addRow("ip octet past 255")
            << oneServer(dev("0", "192.0.2.300", "0")) << -1 << "server_list[0].device[0].device_ip"
            << "\"192.0.2.300\" is not a valid IPv4 address" << 1;
        QTest::addRow("ip with three parts")
            << oneServer(dev("0", "192.0.2", "0")) << -1 << "server_list[0].device[0].device_ip"
            << "not a valid IPv4 address" << 1;
        QTest::addRow("ip is a host name")
            << oneServer(dev("0", "card0.local", "0")) << -1 << "server_list[0].device[0].device_ip"
            << "not a valid IPv4 address" << 1;
        QTest::addRow("ip with empty part")
            << oneServer(dev("0", "192..2.10", "0")) << -1 << "server_list[0].device[0].device_ip"
            << "not a valid IPv4 address" << 1;
        QTest::addRow("device_id 8 out of range")
            << oneServer(dev("8", "192.0.2.10", "0")) << -1 << "server_list[0].device[0].device_id"
            << "device_id \"8\" is out of range: an Ascend server has 8 devices, device_id 0..7" << 1;
        QTest::addRow("device entry not an object")
            << oneServer(dev("0", "192.0.2.10", "0") + R"(, "192.0.2.11")") << -1
            << "server_list[0].device[1]"
            << "expected a device object, found the string \"192.0.2.11\"" << 1;
    }

    void problem() {
        QFETCH(QByteArray, json);
        QFETCH(int, expectedRanks);
        QFETCH(QString, where);
        QFETCH(QString, fragment);
        QFETCH(int, problemCount);
        const rs::RankTableCheck check = rs::parseRankTable(json.toStdString(), expectedRanks);
        QVERIFY(!check.ok());
        QVERIFY(!check.table.has_value());
        QVERIFY2(hasProblem(check, where, fragment), describe(check).constData());
        QVERIFY2(int(check.problems.size()) == problemCount, describe(check).constData());
    }

    // Our line/column must agree with nlohmann's own report of the same error.
    void malformedFileLineColumn() {
        const rs::RankTableCheck check = rs::loadRankTable(fixture("malformed.json").toStdString());
        QCOMPARE(check.problems.size(), size_t(1));
        QCOMPARE(QString::fromStdString(check.problems[0].where), QStringLiteral("line 4, column 15"));
        QVERIFY2(QString::fromStdString(check.problems[0].message).contains("unexpected string literal"),
                 check.problems[0].message.c_str());
        QFile file(fixture("malformed.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        try {
            const nlohmann::json doc = nlohmann::json::parse(file.readAll().toStdString());
            QFAIL(qPrintable("the fixture parsed: " + QString::fromStdString(doc.dump())));
        } catch (const nlohmann::json::parse_error& e) {
            QVERIFY2(QString(e.what()).contains("line 4, column 15"), e.what());
        }
    }

    void severalProblemsAllReported() {
        const rs::RankTableCheck check = rs::loadRankTable(fixture("several_problems.json").toStdString(), 8);
        QVERIFY(!check.ok());
        const std::set<std::pair<std::string, std::string>> expected = {
            {"server_count", "says \"2\" but server_list has 1 entry"},
            {"server_list[0].device[1].device_id", "duplicate device_id \"0\""},
            {"server_list[0].device[1].rank_id", "is the JSON number 1"},
            {"server_list[0].device[2].device_ip", "\"192.0.2.256\" is not a valid IPv4 address"},
            {"server_list[0].device[3].device_id", "device_id \"9\" is out of range"},
            {"server_list[0].device[3].device_ip", "missing field"},
            {"server_list[0].device[3].rank_id",
             "duplicate rank_id \"2\" (also at server_list[0].device[2])"},
            {"server_list", "lists 4 devices but the job has 8 ranks"},
        };
        for (const auto& [where, fragment] : expected)
            QVERIFY2(hasProblem(check, QString::fromStdString(where), QString::fromStdString(fragment)),
                     qPrintable(QString::fromStdString(where + ": " + fragment + "\n") + describe(check)));
        QVERIFY2(check.problems.size() == expected.size(), describe(check).constData());

        // summary: one "where: message" line per problem
        const QStringList lines = QString::fromStdString(check.summary()).split('\n');
        QCOMPARE(lines.size(), qsizetype(check.problems.size()));
        for (size_t i = 0; i < check.problems.size(); ++i)
            QCOMPARE(lines[i],
                     QString::fromStdString(check.problems[i].where + ": " + check.problems[i].message));
    }

    void nonexistentFile() {
        const std::string path = RANKSIGHT_TEST_DATA "/ranktables/does_not_exist.json";
        const rs::RankTableCheck check = rs::loadRankTable(path, 4);
        QVERIFY(!check.ok());
        QCOMPARE(check.problems.size(), size_t(1));
        QCOMPARE(check.problems[0].where, path);
        QVERIFY2(check.problems[0].message.find("no such file") != std::string::npos,
                 check.problems[0].message.c_str());
    }

    void directoryIsNotAFile() {
        const std::string path = RANKSIGHT_TEST_DATA "/ranktables";
        const rs::RankTableCheck check = rs::loadRankTable(path);
        QCOMPARE(check.problems.size(), size_t(1));
        QCOMPARE(check.problems[0].where, path);
        QVERIFY(check.problems[0].message.find("directory") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestRankTable)
#include "tst_ranktable.moc"
